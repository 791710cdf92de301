"""One line of a CSV file (RFC 4180) as its cells, each with the column it starts at: the
readers of `gpuplane cost`'s usage and `gpuplane simulate`'s trace report a bad cell at its
line and column."""

from __future__ import annotations

__all__ = ["split_cells"]


def split_cells(line: str) -> list[tuple[str, int]] | tuple[str, int]:
    """One CSV line (RFC 4180, `"` quotes with `""` inside) as its cells with the 1-based column
    where each starts, whitespace around unquoted cells stripped; or (problem, column)."""
    cells: list[tuple[str, int]] = []
    i, size = 0, len(line)
    while True:
        start = i
        while i < size and line[i] in " \t":
            i += 1
        if i < size and line[i] == '"':
            opened = i
            i += 1
            value: list[str] = []
            while True:
                end = line.find('"', i)
                if end < 0:
                    return ("unclosed quote", opened + 1)
                value.append(line[i:end])
                if end + 1 < size and line[end + 1] == '"':
                    value.append('"')
                    i = end + 2
                    continue
                i = end + 1
                break
            while i < size and line[i] in " \t":
                i += 1
            if i < size and line[i] != ",":
                return ("text after a closing quote", i + 1)
            cells.append(("".join(value), opened + 1))
        else:
            end = line.find(",", i)
            end = size if end < 0 else end
            cells.append((line[i:end].strip(), i + 1 if i < end else start + 1))
            i = end
        if i >= size:
            return cells
        i += 1  # the comma
        if i == size:
            cells.append(("", i + 1))
            return cells
