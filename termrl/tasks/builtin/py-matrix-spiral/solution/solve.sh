#!/bin/bash
cat > spiral.py <<'PY'
"""Spiral traversal and spiral filling of rectangular matrices (lists of lists)."""


def _positions(rows, cols, clockwise):
    top, bottom, left, right = 0, rows - 1, 0, cols - 1
    out = []
    while top <= bottom and left <= right:
        if clockwise:
            out += [(top, c) for c in range(left, right + 1)]
            out += [(r, right) for r in range(top + 1, bottom + 1)]
            if top < bottom:
                out += [(bottom, c) for c in range(right - 1, left - 1, -1)]
            if left < right:
                out += [(r, left) for r in range(bottom - 1, top, -1)]
        else:
            out += [(r, left) for r in range(top, bottom + 1)]
            out += [(bottom, c) for c in range(left + 1, right + 1)]
            if left < right:
                out += [(r, right) for r in range(bottom - 1, top - 1, -1)]
            if top < bottom:
                out += [(top, c) for c in range(right - 1, left, -1)]
        top, bottom, left, right = top + 1, bottom - 1, left + 1, right - 1
    return out


def spiral_order(matrix, clockwise=True):
    rows = len(matrix)
    cols = len(matrix[0]) if rows else 0
    if any(len(row) != cols for row in matrix):
        raise ValueError("ragged matrix")
    return [matrix[r][c] for r, c in _positions(rows, cols, clockwise)]


def spiral_fill(rows, cols, start=1, clockwise=True):
    if rows < 0 or cols < 0:
        raise ValueError("negative size")
    grid = [[0] * cols for _ in range(rows)]
    for i, (r, c) in enumerate(_positions(rows, cols, clockwise)):
        grid[r][c] = start + i
    return grid
PY
