"""``reflect ID --refresh``: the evidence of an uncommitted reflection rebuilt from the
ledger as it stands, the writer's answers kept.

The ledger's part of a reflection is its quoted lines (``>``, which never count as an
answer) and the template's text; everything else in a section is the writer's. A
refresh takes the new rendering's preamble and quoted lines, and puts back, section by
section, every line of the old file that the new rendering does not already hold.
Sections the writer added stay, at the end; front-matter keys the writer added
(``exhausted``) stay too.
"""

from __future__ import annotations

from ledger.core.model.documents import Document, parse_document

LEDGER_KEYS = ("triggers", "target_gate")


def _sections(body: str) -> tuple[list[str], dict[str, list[str]]]:
    """The lines before the first ``## `` heading, and each section's lines by heading."""
    head: list[str] = []
    sections: dict[str, list[str]] = {}
    current: list[str] = head
    for line in body.splitlines():
        if line.startswith("## "):
            current = sections.setdefault(line.strip(), [])
            continue
        current.append(line)
    return head, sections


def refreshed(old_text: str, fresh: Document, where: str) -> Document:
    old = parse_document(old_text, where)
    head, new_sections = _sections(fresh.body)
    _, old_sections = _sections(old.body)
    out = ["\n".join(head).rstrip()]
    for heading, lines in new_sections.items():
        template = set(lines)
        written = [
            line
            for line in old_sections.get(heading, [])
            if not line.startswith(">") and line not in template
        ]
        evidence = "\n".join(lines).strip()
        kept = "\n".join(written).strip()
        out.append(heading + "\n\n" + evidence + ("\n\n" + kept if kept else ""))
    for heading, lines in old_sections.items():
        if heading not in new_sections:
            out.append(heading + "\n\n" + "\n".join(lines).strip())
    # The writer's keys (exhausted, binding_constraint) stay; what fired is the ledger's.
    front = {**fresh.front, **old.front}
    front.update({k: fresh.front[k] for k in LEDGER_KEYS if k in fresh.front})
    return fresh.replace(front=front, body="\n\n".join(out) + "\n")
