"""Strict YAML reading for craft-connector.yml.

PyYAML keeps the last of two equal keys without a word, so a second `dev:` block silently replaces
the first. The loader here refuses duplicates instead, naming the key, the section path and both
lines. It also keeps every key's line and every scalar's text as written, so later checks can
point at a line and read `off` or `0587` the way the user typed them rather than as YAML 1.1
reinterpreted them (a boolean, an octal number).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from etl_craft.core.errors import ConfigurationError
from etl_craft.core.text import not_utf8

KeyPath = tuple[str, ...]

_MERGE_TAG = "tag:yaml.org,2002:merge"


def show_path(path: KeyPath) -> str:
    """A key path as written in messages, e.g. Engine.prod.jdbc_url; the root is `(top level)`."""
    return ".".join(path) if path else "(top level)"


@dataclass(frozen=True)
class YamlDocument:
    """The parsed data plus, for every key path, the key's line and (for scalars) the text written."""

    data: object
    lines: Mapping[KeyPath, int] = field(default_factory=dict)
    raw: Mapping[KeyPath, str] = field(default_factory=dict)

    def line(self, path: KeyPath) -> int | None:
        return self.lines.get(path)

    def text(self, path: KeyPath) -> str | None:
        return self.raw.get(path)


class StrictLoader(yaml.SafeLoader):
    """A SafeLoader that refuses duplicate keys and keeps mapping keys as the text written.

    Keys stay text so that a profile called `on` or `2024` is not turned into a boolean or number.
    """

    def __init__(self, stream: str, source_name: str) -> None:
        super().__init__(stream)
        self.source_name = source_name
        self.key_paths: dict[int, KeyPath] = {}
        self.key_lines: dict[KeyPath, int] = {}
        self.scalar_texts: dict[KeyPath, str] = {}

    # The walk runs before construction, so construct_mapping knows each mapping's path.
    def construct_document(self, node: Node) -> object:
        self._index(node, (), frozenset())
        return super().construct_document(node)

    def _index(self, node: Node, path: KeyPath, active: frozenset[int]) -> None:
        if id(node) in active:  # an alias inside its own anchor
            return
        inner = active | {id(node)}
        if isinstance(node, SequenceNode):
            for position, item in enumerate(node.value):
                self._index(item, (*path, str(position)), inner)
        elif isinstance(node, MappingNode):
            self.key_paths.setdefault(id(node), path)
            self._index_pairs(node, path, inner)

    def _index_pairs(self, node: MappingNode, path: KeyPath, active: frozenset[int]) -> None:
        merged: list[MappingNode] = []
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:
                sources = value_node.value if isinstance(value_node, SequenceNode) else [value_node]
                merged.extend(source for source in sources if isinstance(source, MappingNode))
                continue
            if not isinstance(key_node, ScalarNode):
                continue  # construct_mapping refuses it with its line
            key_path = (*path, key_node.value)
            if key_path in self.key_lines:  # a duplicate (refused later) or a merged default
                continue
            self.key_lines[key_path] = key_node.start_mark.line + 1
            if isinstance(value_node, ScalarNode):
                self.scalar_texts[key_path] = value_node.value
            self._index(value_node, key_path, active)
        # Keys written in the mapping itself win over keys merged in with `<<`.
        for source in merged:
            if id(source) not in active:
                self._index_pairs(source, path, active | {id(source)})

    def construct_mapping(self, node: Node, deep: bool = False) -> dict[str, object]:  # type: ignore[override]
        if not isinstance(node, MappingNode):
            raise yaml.constructor.ConstructorError(
                None, None, f"expected a mapping, found {type(node).__name__}", node.start_mark
            )
        self._refuse_duplicates(node)
        self.flatten_mapping(node)
        mapping: dict[str, object] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, ScalarNode):  # only reachable through a `<<` merge
                raise ConfigurationError(
                    f"{self.source_name}: line {key_node.start_mark.line + 1}: a key that is not plain text",
                    remedy="write the key as plain text",
                )
            mapping[key_node.value] = self.construct_object(value_node, deep=deep)
        return mapping

    def _refuse_duplicates(self, node: MappingNode) -> None:
        path = self.key_paths.get(id(node), ())
        seen: dict[str, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == _MERGE_TAG:
                continue
            line = key_node.start_mark.line + 1
            if not isinstance(key_node, ScalarNode):
                raise ConfigurationError(
                    f"{self.source_name}: {show_path(path)} (line {line}): a key that is not plain text",
                    expected="a name such as dev or jdbc_url",
                    remedy="write the key as plain text",
                )
            key = key_node.value
            if key in seen:
                raise ConfigurationError(
                    f"{self.source_name}: duplicate key {key!r} in {show_path(path)} (lines {seen[key]} and {line})",
                    expected="each key once per mapping",
                    remedy="keep one of them; YAML would otherwise silently use the last",
                )
            seen[key] = line


def parse_yaml(text: str, source_name: str) -> YamlDocument:
    """Parse one YAML document strictly; `source_name` prefixes every message."""
    try:
        loader = StrictLoader(text, source_name)  # its reader refuses control characters at once
    except yaml.reader.ReaderError as exc:
        line = text.count("\n", 0, exc.position) + 1
        column = exc.position - text.rfind("\n", 0, exc.position)
        raise ConfigurationError(
            f"{source_name} (line {line}, column {column}): not valid YAML",
            found=f"the character U+{exc.character:04X}" if isinstance(exc.character, int) else str(exc.reason),
            expected="printable text (YAML allows no control characters but tab and line breaks)",
            remedy="remove the character, or write it as an escape in a double-quoted string",
        ) from None
    try:
        node = loader.get_single_node()
        data = None if node is None else loader.construct_document(node)
    except ValueError as exc:  # a number YAML reads but Python won't convert (thousands of digits)
        raise ConfigurationError(
            f"{source_name}: a value that can't be read",
            found=str(exc).split(";")[0],
            expected="numbers of a sensible size",
            remedy="shorten the value, or quote it to make it text",
        ) from None
    except RecursionError:
        raise ConfigurationError(
            f"{source_name}: not valid YAML for etl-craft",
            found="lists or mappings nested hundreds of levels deep",
            expected="the few levels craft-connector.yml has",
            remedy="remove the nesting",
        ) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        raise ConfigurationError(
            f"{source_name}{where}: not valid YAML ({exc.problem or exc.context})",
            remedy="fix the YAML syntax there; quote a value that starts with @ [ { * & ! or contains ': '",
        ) from None
    except yaml.YAMLError as exc:
        raise ConfigurationError(f"{source_name}: not valid YAML ({exc})", remedy="fix the YAML syntax") from None
    finally:
        loader.dispose()
    return YamlDocument(data, loader.key_lines, loader.scalar_texts)


def load_yaml(path: Path) -> YamlDocument:
    """Read and parse a YAML file; an unreadable file is a ConfigurationError naming it."""
    try:
        data = path.read_bytes()
        text = data.decode("utf-8-sig")
    except FileNotFoundError:
        raise ConfigurationError(f"{path}: no such file", remedy="check the path or pass --config PATH") from None
    except OSError as exc:
        raise ConfigurationError(
            f"{path}: cannot be read",
            found=f"{type(exc).__name__} ({exc.strerror})",
            expected="a readable UTF-8 text file",
            remedy="check the file's permissions",
        ) from None
    except UnicodeDecodeError as exc:
        raise ConfigurationError(
            f"{path}: cannot be read",
            found=not_utf8(data, exc),
            expected="a UTF-8 text file",
            remedy="save it as UTF-8",
        ) from None
    return parse_yaml(text, path.name)
