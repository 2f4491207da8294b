"""Write the demo project's seed CSVs and its three clients' source files (batch 1 and batch 2).

The files are committed as package data of etl-craft-core (etl_craft/demo/); run this only to change
them: uv run python tools/generate_demo_data.py

Everything comes from one seeded random generator, so the output is the same on every machine
(gzip members carry no time stamp or file name). The data is support tickets of a home-internet
provider, served by three outsourced "clients" that each deliver in their own shape:

- Alpha: JSON exports of CRM documents, read after the last `updated_at` (a TIMESTAMP offset);
- Beta: newline-delimited ticket events in log segments, read after the last event offset (NUMBER);
- Gamma: gzipped CSV objects named by sequence number, read after the last object key (TEXT).

Some tickets break a validity rule on purpose (no customer, an agent nobody knows, resolved before
opened, a rating outside 1 to 5); batch 2 fixes about half of those and never breaks a valid ticket,
so "distinct tickets = active fact rows + rejected tickets" holds after both batches.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import random
import uuid
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "packages/etl-craft-core/src/etl_craft/demo"
PROJECT = DEMO / "project"
BATCH2 = DEMO / "batch2"

AGENTS = [
    ("AG01", "Maya Lindqvist", "Billing", "2021-04-12"),
    ("AG02", "Tomás Ferreira", "Billing", "2022-09-05"),
    ("AG03", "Priya Raman", "Network", "2020-01-20"),
    ("AG04", "Jonah Becker", "Network", "2023-02-13"),
    ("AG05", "Chloé Martin", "Onboarding", "2022-06-01"),
    ("AG06", "Samuel Okafor", "Onboarding", "2024-03-18"),
    ("AG07", "Ingrid Nilsen", "Hardware", "2019-11-04"),
    ("AG08", "Diego Alvarez", "Hardware", "2023-08-28"),
    ("AG09", "Hana Sato", "Network", "2021-10-11"),
    ("AG10", "Lucas Moreau", "Billing", "2024-07-01"),
    ("AG11", "Amara Diallo", "Onboarding", "2020-05-25"),
    ("AG12", "Felix Wagner", "Hardware", "2022-12-05"),
]
# Batch 2's agents.csv: Chloé moves to Network (an SCD1 update) and two agents join (inserts).
AGENTS_BATCH2 = [
    *[(a, n, "Network" if a == "AG05" else t, h) for a, n, t, h in AGENTS],
    ("AG13", "Noor Haddad", "Network", "2026-03-02"),
    ("AG14", "Oskar Berg", "Billing", "2026-03-02"),
]
NEW_AGENTS = ("AG13", "AG14")
UNKNOWN_AGENTS = ("AG99", "AG42X")

PRODUCTS = [
    ("FIBER-500", "Fiber 500", "Broadband"),
    ("FIBER-1G", "Fiber 1 Gbit", "Broadband"),
    ("DSL-100", "DSL 100", "Broadband"),
    ("ROUTER-X1", "Router X1", "Equipment"),
    ("MESH-M2", "Mesh kit M2", "Equipment"),
    ("TV-BASIC", "TV Basic", "Television"),
    ("TV-PLUS", "TV Plus", "Television"),
    ("VOIP", "Home phone", "Voice"),
]
CATEGORIES = [
    ("BILLING", "Billing question", "Accounts"),
    ("OUTAGE", "Service outage", "Network"),
    ("SPEED", "Slow connection", "Network"),
    ("SETUP", "Installation and setup", "Field"),
    ("DEVICE", "Faulty device", "Field"),
    ("ACCOUNT", "Account change", "Accounts"),
]
TIERS = ("standard", "silver", "gold")
PRIORITIES = ("low", "normal", "high", "urgent")
FLAWS = ("no_customer", "unknown_agent", "resolved_before_opened", "bad_rating")


@dataclass
class Ticket:
    """One ticket's state at one moment; a source record is one such state."""

    number: int
    customer: str | None
    tier: str
    agent: str | None
    product: str
    category: str
    channel: str
    priority: str
    status: str
    opened_at: datetime
    resolved_at: datetime | None
    rating: int | None
    updated_at: datetime
    flaw: str | None = None
    history: list[Ticket] = field(default_factory=list, repr=False)


@dataclass(frozen=True)
class Client:
    name: str
    first_number: int
    new_tickets: tuple[int, int]  # batch 1, batch 2
    channels: tuple[str, ...]


CLIENTS = (
    Client("alpha", 10001, (210, 55), ("email", "web")),
    Client("beta", 50001, (190, 60), ("chat", "app")),
    Client("gamma", 70001, (200, 50), ("phone", "email", "store")),
)
BATCH_START = {1: datetime(2026, 3, 2, 7, 0, tzinfo=UTC), 2: datetime(2026, 3, 4, 7, 0, tzinfo=UTC)}
BATCH_HOURS = 34


def _minutes(rng: random.Random, low: int, high: int) -> timedelta:
    return timedelta(minutes=rng.randint(low, high))


def _resolve(rng: random.Random, ticket: Ticket, at: datetime) -> None:
    ticket.status = rng.choice(("resolved", "resolved", "closed"))
    ticket.resolved_at = at
    # Most customers rate; a few are unhappy, which a REPORT rule lists.
    ticket.rating = rng.choices((None, 1, 2, 3, 4, 5), weights=(3, 1, 1, 2, 5, 6))[0]


def _new_ticket(rng: random.Random, client: Client, number: int, opened: datetime, batch: int) -> Ticket:
    agents = [a[0] for a in (AGENTS_BATCH2 if batch == 2 else AGENTS)]
    ticket = Ticket(
        number=number,
        customer=f"CUST-{rng.randint(1, 900):04d}",
        tier=rng.choices(TIERS, weights=(6, 3, 1))[0],
        agent=rng.choice([*agents, None]) if rng.random() < 0.9 else None,
        product=rng.choice(PRODUCTS)[0],
        category=rng.choice(CATEGORIES)[0],
        channel=rng.choice(client.channels),
        priority=rng.choices(PRIORITIES, weights=(3, 6, 3, 1))[0],
        status="open",
        opened_at=opened,
        resolved_at=None,
        rating=None,
        updated_at=opened + _minutes(rng, 1, 5),
    )
    if batch == 2 and rng.random() < 0.3:
        ticket.agent = rng.choice(NEW_AGENTS)
    return ticket


def _versions(rng: random.Random, ticket: Ticket, until: datetime) -> list[Ticket]:
    """The states a ticket goes through before `until`: opened, maybe pending, maybe resolved."""
    states = [replace(ticket, history=[])]
    at = ticket.updated_at
    if rng.random() < 0.45:
        at += _minutes(rng, 10, 300)
        if at < until:
            ticket.status, ticket.updated_at = "pending", at
            ticket.agent = ticket.agent or rng.choice([a[0] for a in AGENTS])
            states.append(replace(ticket, history=[]))
    if rng.random() < 0.6:
        # Mostly same day; some take days, which a REPORT rule lists.
        at += _minutes(rng, 20, 600) if rng.random() < 0.85 else timedelta(hours=rng.randint(80, 120))
        if at < until:
            _resolve(rng, ticket, at)
            ticket.updated_at = at + _minutes(rng, 1, 3)
            states.append(replace(ticket, history=[]))
    return states


def _break(rng: random.Random, ticket: Ticket) -> None:
    flaw = rng.choice(FLAWS)
    if flaw == "resolved_before_opened" and ticket.resolved_at is None:
        flaw = "no_customer"
    if flaw == "bad_rating" and ticket.resolved_at is None:
        flaw = "unknown_agent"
    ticket.flaw = flaw
    if flaw == "no_customer":
        ticket.customer = None
    elif flaw == "unknown_agent":
        ticket.agent = rng.choice(UNKNOWN_AGENTS)
    elif flaw == "resolved_before_opened":
        assert ticket.resolved_at is not None
        ticket.resolved_at = ticket.opened_at - timedelta(hours=rng.randint(2, 30))
    else:
        ticket.rating = rng.choice((0, 6, 9))


def _repair(rng: random.Random, ticket: Ticket) -> None:
    if ticket.flaw == "no_customer":
        ticket.customer = f"CUST-{rng.randint(1, 900):04d}"
    elif ticket.flaw == "unknown_agent":
        ticket.agent = rng.choice(NEW_AGENTS)
    elif ticket.flaw == "resolved_before_opened":
        ticket.resolved_at = ticket.opened_at + _minutes(rng, 30, 400)
    elif ticket.flaw == "bad_rating":
        ticket.rating = rng.randint(3, 5)
    ticket.flaw = None


def simulate(client: Client, seed: int) -> dict[int, list[Ticket]]:
    """Source records per batch, each a ticket state, in the order the source produced them."""
    rng = random.Random(seed)
    tickets: list[Ticket] = []
    records: dict[int, list[Ticket]] = {1: [], 2: []}
    number = client.first_number
    for batch in (1, 2):
        start = BATCH_START[batch]
        until = start + timedelta(hours=BATCH_HOURS)
        if batch == 2:
            # Updates of batch 1 tickets: about half of the broken ones are repaired, some open ones
            # are resolved. Every update keeps a valid ticket valid.
            for ticket in tickets:
                at = start + _minutes(rng, 5, BATCH_HOURS * 60 - 60)
                if ticket.flaw and rng.random() < 0.5:
                    _repair(rng, ticket)
                elif ticket.status in ("open", "pending") and not ticket.flaw and rng.random() < 0.5:
                    ticket.agent = ticket.agent or rng.choice([a[0] for a in AGENTS])
                    _resolve(rng, ticket, at)
                else:
                    continue
                ticket.updated_at = at + _minutes(rng, 1, 4)
                records[2].append(replace(ticket, history=[]))
        for _ in range(client.new_tickets[batch - 1]):
            opened = start + _minutes(rng, 0, BATCH_HOURS * 60 - 90)
            ticket = _new_ticket(rng, client, number, opened, batch)
            number += 1
            states = _versions(rng, ticket, until)
            if rng.random() < 0.08:
                _break(rng, ticket)
                states[-1] = replace(ticket, history=[])
            records[batch].extend(states)
            tickets.append(ticket)
    for batch_records in records.values():
        batch_records.sort(key=lambda t: (t.updated_at, t.number))
        _spread_equal_times(batch_records)
    return records


def _spread_equal_times(records: list[Ticket]) -> None:
    """Make update times strictly increasing, so one ticket's versions never tie."""
    for i in range(1, len(records)):
        if records[i].updated_at <= records[i - 1].updated_at:
            records[i].updated_at = records[i - 1].updated_at + timedelta(seconds=1)


def _iso(value: datetime | None) -> str | None:
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if value else None


# --- Alpha: JSON documents ---------------------------------------------------------------------


def alpha_document(t: Ticket) -> dict[str, object]:
    doc: dict[str, object] = {
        "_id": f"A-{t.number}",
        "customer": {"id": t.customer, "tier": t.tier.title()},
        "assignee": t.agent,
        "product": t.product,
        "topic": t.category.lower(),
        "channel": t.channel.title(),
        "priority": t.priority.title(),
        "state": t.status.title(),
        "opened_at": _iso(t.opened_at),
        "resolved_at": _iso(t.resolved_at),
        "csat": t.rating,
        "updated_at": _iso(t.updated_at),
    }
    if t.customer is None:
        doc["customer"] = {"tier": t.tier.title()}  # the CRM drops the id rather than writing null
    return doc


def write_alpha(records: dict[int, list[Ticket]]) -> None:
    exports = {1: [records[1][: len(records[1]) // 2], records[1][len(records[1]) // 2 :]], 2: [records[2]]}
    sequence = 0
    for batch, parts in exports.items():
        root = (PROJECT if batch == 1 else BATCH2) / "sources/alpha"
        root.mkdir(parents=True, exist_ok=True)
        for part in parts:
            sequence += 1
            exported_at = json.dumps(_iso(part[-1].updated_at + timedelta(minutes=5)))
            documents = ",\n".join("  " + json.dumps(alpha_document(t), ensure_ascii=False) for t in part)
            text = f'{{"collection": "tickets", "exported_at": {exported_at}, "documents": [\n{documents}\n]}}\n'
            (root / f"export-{sequence:04d}.json").write_text(text, encoding="utf-8")


# --- Beta: newline-delimited events ------------------------------------------------------------


def write_beta(records: dict[int, list[Ticket]], seed: int) -> None:
    rng = random.Random(seed)
    offset = 0
    segment = 0
    seen: set[int] = set()
    for batch in (1, 2):
        root = (PROJECT if batch == 1 else BATCH2) / "sources/beta"
        root.mkdir(parents=True, exist_ok=True)
        half = (len(records[batch]) + 1) // 2
        chunks = [records[batch][:half], records[batch][half:]]
        for chunk in chunks:
            segment += 1
            lines = []
            for t in chunk:
                offset += 1
                kind = "ticket.created" if t.number not in seen else "ticket.updated"
                if t.status in ("resolved", "closed") and kind == "ticket.updated":
                    kind = "ticket.resolved"
                seen.add(t.number)
                event = {
                    "offset": offset,
                    "event_id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                    "type": kind,
                    "emitted_at": _iso(t.updated_at),
                    "ticket": {
                        "id": t.number,
                        "customer": t.customer,
                        "tier": t.tier,
                        "agent": t.agent,
                        "sku": t.product,
                        "category": t.category.lower(),
                        "channel": t.channel,
                        "priority": PRIORITIES.index(t.priority) + 1,
                        "status": t.status,
                        "opened_at": _iso(t.opened_at),
                        "resolved_at": _iso(t.resolved_at),
                        "rating": t.rating,
                    },
                }
                lines.append(json.dumps(event, separators=(",", ":"), ensure_ascii=False))
            (root / f"segment-{segment:06d}.ndjson").write_text("\n".join(lines) + "\n", encoding="utf-8")


# --- Gamma: gzipped CSV objects ------------------------------------------------------------------

GAMMA_ZONE = ZoneInfo("America/New_York")
GAMMA_COLUMNS = (
    "ticket_number",
    "customer_ref",
    "customer_tier",
    "agent_code",
    "product_sku",
    "category",
    "channel",
    "priority_level",
    "status",
    "opened_local",
    "closed_local",
    "satisfaction",
    "last_modified_local",
)


def _local(value: datetime | None) -> str:
    return value.astimezone(GAMMA_ZONE).strftime("%Y-%m-%d %H:%M:%S%z") if value else ""


def gamma_row(t: Ticket) -> list[str]:
    return [
        f"G-{t.number}",
        t.customer or "",
        t.tier.upper(),
        t.agent or "",
        t.product,
        t.category,
        t.channel.upper(),
        f"P{4 - PRIORITIES.index(t.priority)}",  # P1 is urgent
        t.status.upper(),
        _local(t.opened_at),
        _local(t.resolved_at),
        "" if t.rating is None else str(t.rating),
        _local(t.updated_at),
    ]


def write_gamma(records: dict[int, list[Ticket]]) -> None:
    sequence = 0
    for batch in (1, 2):
        root = (PROJECT if batch == 1 else BATCH2) / "sources/gamma"
        root.mkdir(parents=True, exist_ok=True)
        rows = records[batch]
        size = 60
        for start in range(0, len(rows), size):
            sequence += 1
            text = io.StringIO()
            writer = csv.writer(text, lineterminator="\n")
            writer.writerow(GAMMA_COLUMNS)
            writer.writerows(gamma_row(t) for t in rows[start : start + size])
            buffer = io.BytesIO()
            with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0) as gz:
                gz.write(text.getvalue().encode("utf-8"))
            (root / f"{sequence:010d}_tickets.csv.gz").write_bytes(buffer.getvalue())


# --- Seeds --------------------------------------------------------------------------------------


def write_csv(path: Path, header: tuple[str, ...], rows: list[tuple[str, ...]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)


def main() -> None:
    write_csv(PROJECT / "seeds/agents.csv", ("agent_id", "agent_name", "team", "hired_on"), AGENTS)
    write_csv(BATCH2 / "seeds/agents.csv", ("agent_id", "agent_name", "team", "hired_on"), AGENTS_BATCH2)
    write_csv(PROJECT / "seeds/products.csv", ("product_code", "product_name", "product_line"), PRODUCTS)
    write_csv(PROJECT / "seeds/categories.csv", ("category_code", "category_name", "support_area"), CATEGORIES)
    for n, client in enumerate(CLIENTS):
        records = simulate(client, seed=20260302 + n)
        if client.name == "alpha":
            write_alpha(records)
        elif client.name == "beta":
            write_beta(records, seed=7 + n)
        else:
            write_gamma(records)
        tickets = {t.number for batch in records.values() for t in batch}
        print(f"{client.name}: {sum(len(r) for r in records.values())} records, {len(tickets)} tickets")
    print(f"wrote {PROJECT} and {BATCH2}")


if __name__ == "__main__":
    main()
