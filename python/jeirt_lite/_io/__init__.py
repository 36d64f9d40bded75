"""The I/O wing: every table and vector file jeirt-lite reads or writes goes through here.

- `formats`: the registry, one row per file format (suffixes, record reader class, writer class), and one per
  format of precomputed question vectors (`.npy`).
- `vocabulary`: column names (text, ids, labels, the `p[<llm>]` output columns) and the 0/1 label vocabulary.
- `records`: one strict reader per table format (CSV/TSV, JSONL, Parquet), yielding numbered rows in chunks.
- `texts`: what the commands read from a table: question texts with ids (`score`), texts with labels
  (`add-llm`); `tables`: whole tables, every column (the report, training).
- `vectors`: `.npy` question vectors and their ids.
- `writers`: the scored-bank writers; `outputs`: output paths (never an input, written atomically).

Adding a table format means one record reader class, one writer class and one row in `formats.FORMATS`.
"""
