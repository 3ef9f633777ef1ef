"""Tables that directives write as MyST text and parse: the learning path, About's build table."""


def list_table(rows: list[tuple[str, ...]], classes: str = "", header: bool = True) -> str:
    """A MyST ``{list-table}`` of ``rows`` (each cell MyST text), for a directive to parse."""
    lines = ["::::{list-table}", ":widths: auto", f":header-rows: {int(header)}"]
    if classes:
        lines.append(f":class: {classes}")
    for first, *others in rows:
        lines += [f"* - {first}", *(f"  - {cell}" for cell in others)]
    return "\n".join([*lines, "::::"])
