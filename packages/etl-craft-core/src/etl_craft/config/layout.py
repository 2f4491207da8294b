"""The file's shape: section order, known keys, and profile blocks.

A section that varies per environment holds one block per profile. The active profile is the
section's own `Profile`, else `Secrets.Profile`; section-level keys apply to every profile and a
key in the active block overrides them. Key names are checked in every block, so a typo in a
profile that is not in use today still fails now rather than on the day it is selected.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from etl_craft.config.values import LOOKS_LIKE_VARIABLE, Context, Reader, Setting
from etl_craft.config.yaml_strict import KeyPath, show_path
from etl_craft.core.text import did_you_mean

SECTION_ORDER = (
    "Secrets",
    "Orchestration",
    "Engine",
    "Warehouse",
    "Cloning",
    "Docs_site",
    "Logs",
    "Retention",
    "Redaction",
)
REQUIRED_SECTIONS = ("Orchestration", "Engine")


@dataclass(frozen=True)
class BlockSpec:
    """The keys one block accepts."""

    name: str
    keys: tuple[str, ...]  # in documentation order; `Profile` only at section level
    nested: Mapping[str, BlockSpec] = field(default_factory=dict)  # mapping-valued keys (Email)
    items: Mapping[str, BlockSpec] = field(default_factory=dict)  # keys holding a list of mappings (Webhooks)
    hints: Mapping[str, str] = field(default_factory=dict)  # names users may try, and why they fail


def check_layout(ctx: Context, data: object) -> dict[str, object]:
    """The top-level mapping, once its sections are known, complete and in the fixed order."""
    if not isinstance(data, dict):
        raise ctx.error(
            (),
            found="an empty file" if data is None else f"a {type(data).__name__}",
            expected="a mapping of sections: " + ", ".join(SECTION_ORDER),
            remedy="start from the example in docs/reference/configuration.md",
        )
    for name in data:
        if name not in SECTION_ORDER:
            raise ctx.error(
                (name,),
                "unknown section",
                expected="sections " + ", ".join(SECTION_ORDER),
                remedy=f"rename or remove it{did_you_mean(name, SECTION_ORDER)}",
            )
    written = list(data)
    if written != [name for name in SECTION_ORDER if name in data]:
        raise ctx.error(
            (),
            "sections out of order",
            found=", ".join(written),
            expected="this order: " + ", ".join(SECTION_ORDER) + " (optional ones may be left out)",
            remedy="move the sections into that order",
        )
    for name in REQUIRED_SECTIONS:
        if name not in data:
            raise ctx.error(
                (),
                f"section {name} is missing",
                expected="Orchestration and Engine"
                " (Secrets, Warehouse, Cloning, Docs_site, Logs, Retention, Redaction are optional)",
                remedy=f"add the {name} section",
            )
    return data


def check_keys(ctx: Context, spec: BlockSpec, block: Mapping[str, object], path: KeyPath, *, in_profile: bool) -> None:
    """Refuse keys the block does not know, naming the expected ones and the nearest."""
    allowed = tuple(key for key in spec.keys if not (in_profile and key == "Profile"))
    for key in block:
        if key in allowed:
            continue
        if in_profile and key == "Profile":
            raise ctx.error(
                (*path, key),
                "Profile is read only at section level",
                expected="Profile beside the profile blocks, not inside one",
                remedy=f"move it up to {path[0]}",
            )
        remedy = spec.hints.get(key) or f"rename or remove it{did_you_mean(key, allowed)}; keys are case-sensitive"
        if in_profile:
            remedy += f" ({show_path(path)} is read as a profile block because its value is a mapping)"
        raise ctx.error((*path, key), "unknown key", expected="one of " + ", ".join(allowed), remedy=remedy)
    for key, inner in spec.nested.items():
        value = block.get(key)
        if isinstance(value, dict):
            check_keys(ctx, inner, value, (*path, key), in_profile=False)
    for key, inner in spec.items.items():
        value = block.get(key)
        for position, item in enumerate(value if isinstance(value, list) else ()):
            if isinstance(item, dict):
                check_keys(ctx, inner, item, (*path, key, str(position)), in_profile=False)


def open_section(
    ctx: Context,
    spec: BlockSpec,
    body: object,
    default_profile: str | None,
    *,
    profiles: bool = True,
) -> Reader:
    """A Reader over the section's effective settings for its active profile."""
    path: KeyPath = (spec.name,)
    if body is None:
        body = {}
    if not isinstance(body, dict):
        raise ctx.error(
            path,
            found=f"a {type(body).__name__}",
            expected="a mapping of keys",
            remedy="indent the section's keys under it",
        )
    blocks = {
        key: value for key, value in body.items() if profiles and isinstance(value, dict) and key not in spec.keys
    }
    common = {key: value for key, value in body.items() if key not in blocks}
    check_keys(ctx, spec, common, path, in_profile=False)
    for name, block in blocks.items():
        check_keys(ctx, spec, block, (*path, name), in_profile=True)
    settings = {key: Setting(value, (*path, key)) for key, value in common.items()}
    if not profiles:
        return Reader(ctx, path, settings, None)
    settings.pop("Profile", None)
    section_reader = Reader(ctx, path, {"Profile": Setting(common.get("Profile"), (*path, "Profile"))}, None)
    own = section_reader.get("Profile")
    chosen = section_reader.text("Profile")
    active = chosen if chosen is not None else default_profile
    if not blocks:
        if own is not None:
            raise ctx.error(
                (*path, "Profile"),
                f"selects profile {chosen!r} but {spec.name} has no profile blocks",
                expected=f"a block such as {spec.name}.{chosen}: {{...}}",
                remedy=f"add the profile block or remove {spec.name}.Profile",
            )
        return Reader(ctx, path, settings, active)
    available = ", ".join(blocks)
    if active is None:
        raise ctx.error(
            path,
            f"has profile blocks ({available}) but no profile is selected",
            expected=f"{spec.name}.Profile or Secrets.Profile naming one of {available}",
            remedy="set Secrets.Profile (for every section) or this section's Profile",
        )
    if active not in blocks:
        origin = (*path, "Profile") if own is not None else ("Secrets", "Profile")
        note = ""
        if LOOKS_LIKE_VARIABLE.fullmatch(active):
            note = f" (no variable {active} is set, so the text itself was used)"
        raise ctx.error(
            origin,
            f"selects profile {active!r}, which {spec.name} does not define{note}",
            expected=f"one of {available}",
            remedy=f"select an existing profile or add the {spec.name}.{active} block" + did_you_mean(active, blocks),
        )
    block_path = (*path, active)
    for key, value in blocks[active].items():
        settings[key] = Setting(value, (*block_path, key))
    return Reader(ctx, block_path, settings, active)
