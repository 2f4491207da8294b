"""The Warehouse section, read with the help of the installed warehouse dialects.

A dialect class (etl-craft-warehouses, or any distribution in the `etl_craft.warehouses` entry point
group) says which JDBC URLs it takes, how they parse, which table formats and keys it reads, so a new
warehouse needs no change here. This layer sees a dialect class only through `WarehouseKind`; the
class belongs to the handlers layer and imports its driver only when it connects, so loading every
installed one costs a few small imports.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from etl_craft.config.connections import AUTH_HINTS, name_mismatch, refuser
from etl_craft.config.layout import BlockSpec, open_section
from etl_craft.config.model import ConnectionProfile
from etl_craft.config.urls import JdbcTarget, Refuse, Resolve, shown_url, url_kind
from etl_craft.config.values import Context, Reader, normalise_choice, show
from etl_craft.core.errors import ConfigurationError

if TYPE_CHECKING:
    from importlib import metadata

ENTRY_POINT_GROUP = "etl_craft.warehouses"
SECTION_KEYS = ("Profile", "Name", "Table_format", "jdbc_url", "schema", "Max_warehouse_queries")

_FIELD_HINT = (
    "no installed warehouse reads it (the catalog is the URL's path on Trino and Databricks; Snowflake's"
    " database is the URL's db= setting)"
)
_HINTS = {**AUTH_HINTS, "database": _FIELD_HINT, "catalog": _FIELD_HINT}


@runtime_checkable
class WarehouseKind(Protocol):
    """What the configuration asks of a warehouse dialect class (`WarehouseDialect` has it all).

    `name` is the entry point's name and the one spelling of the warehouse: the Warehouse `Name`
    key, messages and the profile's `dialect` use it.
    """

    name: str
    display_name: str
    jdbc_subprotocols: tuple[str, ...]  # the URL's subprotocols it takes, in lower case
    url_form: str  # the URL's form, for messages
    table_formats: tuple[str, ...]  # the Table_format values it serves; the first is its default
    default_schema: str | None  # None: `schema` is required
    profile_keys: tuple[str, ...]  # the section keys it reads beyond SECTION_KEYS

    def parse_url(self, url: str, resolve: Resolve, refuse: Refuse) -> JdbcTarget: ...

    def read_profile(self, reader: Reader, profile: ConnectionProfile) -> ConnectionProfile: ...

    def describe_login(self, profile: ConnectionProfile) -> str: ...


@cache
def installed_warehouses() -> dict[str, metadata.EntryPoint]:
    """The entry points of the installed dialects by name, read once per process."""
    from importlib import metadata  # a few milliseconds: only a configuration with a Warehouse pays them

    return {entry.name: entry for entry in metadata.entry_points(group=ENTRY_POINT_GROUP)}


@cache
def warehouse_kind(name: str) -> WarehouseKind:
    """The installed dialect class called `name`; a broken or misnamed one is refused, naming it."""
    entry = installed_warehouses()[name]
    where = f"entry point {name} of {ENTRY_POINT_GROUP} ({entry.value})"
    remedy = "reinstall the distribution that provides it, or uninstall it"
    try:
        found = entry.load()
    except Exception as exc:  # an import error of a third-party distribution: name it, don't crash
        raise ConfigurationError(
            where, found=f"an import that fails ({type(exc).__name__}: {exc})", remedy=remedy
        ) from exc
    if not isinstance(found, type) or not isinstance(found, WarehouseKind):
        raise ConfigurationError(
            where,
            found=repr(found),
            expected="a WarehouseDialect subclass that sets name, display_name, jdbc_subprotocols and url_form",
            remedy=remedy,
        )
    if found.name != name:
        raise ConfigurationError(
            where,
            found=f"a dialect named {found.name!r}",
            expected=f"the dialect's name as its entry point's name ({name})",
            remedy=remedy,
        )
    return found


def warehouse_kinds() -> list[WarehouseKind]:
    return [warehouse_kind(name) for name in sorted(installed_warehouses())]


def describe_login(profile: ConnectionProfile) -> str:
    """The Warehouse login in one phrase, for doctor."""
    assert profile.dialect is not None, "only a Warehouse profile has a dialect"
    return warehouse_kind(profile.dialect).describe_login(profile)


def _forms(kinds: list[WarehouseKind]) -> str:
    return " or ".join(f"{kind.name} ({kind.url_form})" for kind in kinds) or "none (install etl-craft-warehouses)"


def _kinds_for_url(reader: Reader, url: str, kinds: list[WarehouseKind]) -> list[WarehouseKind]:
    subprotocol = url_kind(url)
    found = [kind for kind in kinds if subprotocol in kind.jdbc_subprotocols]
    if found:
        return found
    if subprotocol:
        raise reader.error(
            "jdbc_url",
            f"warehouse {subprotocol!r} is not supported in this release",
            found=shown_url(url),
            expected=f"a supported warehouse: {_forms(kinds)}",
            remedy=f"use a supported warehouse, or install the distribution whose dialect adds {subprotocol}",
        )
    raise reader.error("jdbc_url", found=shown_url(url), expected=_forms(kinds), remedy="start the URL with jdbc:")


def _kind_for_format(reader: Reader, candidates: list[WarehouseKind]) -> tuple[WarehouseKind, str]:
    """The dialect serving the section's Table_format (default: the first dialect's first format)."""
    setting = reader.get("Table_format")
    if setting is None:
        return candidates[0], candidates[0].table_formats[0]
    text, variable = reader.resolve(setting)
    for kind in candidates:
        chosen = normalise_choice(text, kind.table_formats)
        if chosen is not None:
            return kind, chosen
    formats = sorted({fmt for kind in candidates for fmt in kind.table_formats})
    raise reader.error(
        "Table_format",
        f"{text} is not available on a {candidates[0].display_name} warehouse",
        found=show(text, variable),
        expected="Table_format: " + " or ".join(formats),
        remedy=f"use {formats[0]} (or leave Table_format out), or install the dialect that stores {text} tables",
    )


def _check_name(reader: Reader, kind: WarehouseKind, kinds: list[WarehouseKind]) -> str | None:
    """The optional Name, which must name the warehouse the URL names (any case)."""
    setting = reader.get("Name")
    if setting is None:
        return None
    text, variable = reader.resolve(setting)
    names = {other.name.lower() for other in kinds}
    wanted = text.strip().lower()
    if wanted not in names:
        raise reader.error(
            "Name",
            f"{text} is not supported in this release",
            found=show(text, variable),
            expected="Name " + " or ".join(sorted(names)) + " (any case)",
            remedy="use a supported warehouse, or install the distribution whose dialect adds it",
        )
    if wanted != kind.name.lower():
        raise name_mismatch(reader, show(text, variable), kind.display_name, kind.name)
    return text.strip()


def _schema(reader: Reader, kind: WarehouseKind) -> str:
    if kind.default_schema is not None:
        return reader.text("schema", kind.default_schema) or kind.default_schema
    return reader.required_text(
        "schema", expected=f"the existing {kind.display_name} schema that holds the warehouse's tables"
    )


def _max_queries(reader: Reader) -> int | None:
    """Max_warehouse_queries: the most warehouse-slot attempts (SQL, BUSINESS_RULES, EMAIL_ALERT)
    claimed or running at once on this connection, across every pool (S5.E); unset: no limit."""
    if reader.get("Max_warehouse_queries") is None:
        return None
    return reader.whole("Max_warehouse_queries", 0, 1, 10_000)


def parse_warehouse(ctx: Context, body: object, default_profile: str | None) -> ConnectionProfile:
    kinds = warehouse_kinds()
    extra = tuple(dict.fromkeys(key for kind in kinds for key in kind.profile_keys))
    reader = open_section(ctx, BlockSpec("Warehouse", (*SECTION_KEYS, *extra), hints=_HINTS), body, default_profile)
    url = reader.required_text("jdbc_url", expected=_forms(kinds))
    kind, table_format = _kind_for_format(reader, _kinds_for_url(reader, url, kinds))
    target = kind.parse_url(url, ctx.resolve_path, refuser(reader, "jdbc_url"))
    profile = ConnectionProfile(
        section="Warehouse",
        profile=reader.profile_block,
        name=_check_name(reader, kind, kinds),
        jdbc_url=target.url,
        schema=_schema(reader, kind),
        table_format=table_format,
        url_files=target.url_files,
        dialect=kind.name,
        max_queries=_max_queries(reader),
    )
    profile = kind.read_profile(reader, profile)
    for key in reader.present(extra):
        if key not in kind.profile_keys:
            raise reader.error(key, f"is not used by a {kind.display_name} warehouse", remedy=f"remove {key}")
    return profile
