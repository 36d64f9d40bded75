"""Texts to question vectors: a Hugging Face tokenizer and one ONNX Runtime session, batched."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Optional

import numpy as np

from ._errors import JeirtError
from ._io.vocabulary import SINGLE_STRING_TEXTS
from ._limits import MAX_CHUNK_ROWS, bounded_int
from ._manifest import EncoderSpec
from ._type_names import python_type

# Small batches of length-sorted texts: on a CPU, big padded batches cost more than they save.
# A router may name its own in the manifest (encoder.batch_size), chosen per encoder from measurements in
# docs/research/encoders.md (a transformer one text at a time, a static lookup-and-average graph a few texts
# per call).
DEFAULT_BATCH_SIZE = 8


def _utf8_name(path: Path) -> bool:
    """Whether `path` can be written in UTF-8 (a name's undecodable bytes come back from the OS as lone surrogates)."""
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_texts(texts: Sequence[str]) -> list[str]:
    """Validate a batch of question texts; return it as a list."""
    if isinstance(texts, (str, bytes)):
        raise JeirtError(SINGLE_STRING_TEXTS)
    if isinstance(texts, np.ndarray) and np.issubdtype(texts.dtype, np.number):
        raise JeirtError("texts must be a list of strings, got a numeric array (question vectors embedded elsewhere: "
                         "pass EncodedQuestions(vectors))")
    # Iterating these gives a table's column names, a mapping's keys, or a set's strings in no fixed order: each
    # would be routed without an error, as the wrong questions or in the wrong order.
    # A pandas DataFrame (columns, iloc) or a pyarrow Table or RecordBatch (column_names, schema).
    if (hasattr(texts, "columns") and hasattr(texts, "iloc")) or (hasattr(texts, "column_names") and
                                                                  hasattr(texts, "schema")):
        raise JeirtError(f"texts must be a list of strings, got {python_type(texts)} (pass its text column, "
                         "e.g. table['text'])")
    if isinstance(texts, Mapping):
        raise JeirtError(f"texts must be a list of strings, got {python_type(texts)} (pass its values, e.g. "
                         "list(texts.values()))")
    if isinstance(texts, (set, frozenset)):  # a mapping's key view is a set too, but an ordered one
        raise JeirtError(f"texts must be a list of strings, got {python_type(texts)}, which has no order "
                         "(pass a list, e.g. sorted(texts))")
    try:
        # A pyarrow column iterates as scalars, not strings: its to_pylist gives the strings (None for a null).
        items = list(texts.to_pylist() if hasattr(texts, "to_pylist") else texts)
    except TypeError as err:
        raise JeirtError(f"texts must be a sequence of strings, got {python_type(texts)}") from err
    for i, text in enumerate(items):
        if not isinstance(text, str):
            hint = " (question vectors go in as EncodedQuestions(vectors, features))" if isinstance(
                text, np.ndarray) else ""
            raise JeirtError(f"text {i} is {python_type(text)}, not a string{hint}")
        if not text.strip():
            raise JeirtError(f"text {i} is empty")
        if "\x00" in text:  # refused as the table readers refuse it: a binary file, or UTF-16 read as UTF-8
            raise JeirtError(f"text {i} holds a NUL character (a binary file, or UTF-16 read as UTF-8?)")
    return items


class OnnxEncoder:
    """Encodes texts with the router's tokenizer and ONNX graph (encoder + pooling + adapter); `Router.encode`
    cuts texts to `spec.max_chars` before they get here."""

    def __init__(self, tokenizer_path: Path, onnx_path: Path, spec: EncoderSpec, dim: int, threads: int):
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.max_length = spec.max_seq_length
        self.input_names = list(spec.input_names)
        self.output_name = spec.output_name
        # Optional second output: the encoder's own features before the adapter (onboarding corrections use them).
        self.feature_output: Optional[str] = spec.feature_output
        self.feature_dim = spec.feature_dim
        self.dim = dim
        self.batch_size = DEFAULT_BATCH_SIZE if spec.batch_size is None else spec.batch_size
        if not _utf8_name(tokenizer_path.parent):
            # tokenizers and ONNX Runtime take a file by its name as UTF-8 text: a byte of another encoding in it
            # (a Linux path may hold any) has no such form.
            raise JeirtError(f"{tokenizer_path.parent}: the router folder's path is not valid UTF-8, and the "
                             "tokenizer and ONNX Runtime open its files by a UTF-8 name: rename the folder, or copy it "
                             "to a path that is")
        try:
            tokenizer = Tokenizer.from_file(str(tokenizer_path))
        except Exception as err:  # tokenizers raises a bare Exception on a bad file
            raise JeirtError(f"{tokenizer_path}: not a readable tokenizers file ({err})") from err
        # tokenizer.json files often carry their own truncation (128 for MiniLM) and a fixed padding length; the
        # manifest's max_seq_length is what the encoder was trained and exported with, so it wins.
        tokenizer.enable_truncation(max_length=self.max_length)
        # Padding happens per length-sorted batch below, not over the whole call.
        self.pad_id = _pad_id(tokenizer)
        tokenizer.no_padding()
        self.tokenizer = tokenizer

        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1  # one graph at a time; the cores go to intra-op work
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        try:
            self.session = ort.InferenceSession(str(onnx_path), options, providers=["CPUExecutionProvider"])
        except Exception as err:  # onnxruntime raises its own non-ValueError types for bad graphs
            raise JeirtError(f"{onnx_path}: ONNX Runtime cannot load it ({err})") from err
        self._check_graph(onnx_path)

    def _check_graph(self, onnx_path: Path) -> None:
        graph_inputs = {node.name: node for node in self.session.get_inputs()}
        for name in self.input_names:
            if name not in graph_inputs:
                raise JeirtError(f"{onnx_path}: has no input {name!r} (inputs: {sorted(graph_inputs)})")
            node = graph_inputs[name]
            if node.type != "tensor(int64)" or len(node.shape) != 2:
                raise JeirtError(
                    f"{onnx_path}: input {name!r} is {node.type} of shape {node.shape}, expected int64 (N, L)"
                )
        required = [name for name, node in graph_inputs.items() if name not in self.input_names]
        if required:
            raise JeirtError(f"{onnx_path}: needs inputs {required} that the router does not provide")
        outputs = {node.name: node for node in self.session.get_outputs()}
        if self.output_name not in outputs:
            raise JeirtError(f"{onnx_path}: has no output {self.output_name!r} (outputs: {sorted(outputs)})")
        shape = outputs[self.output_name].shape
        if outputs[self.output_name].type != "tensor(float)":
            raise JeirtError(
                f"{onnx_path}: output {self.output_name!r} is {outputs[self.output_name].type}, expected float32"
            )
        if len(shape) != 2 or (isinstance(shape[1], int) and shape[1] != self.dim):
            raise JeirtError(f"{onnx_path}: output {self.output_name!r} has shape {shape}, expected (N, {self.dim})")
        if self.feature_output is not None:
            if self.feature_output not in outputs:
                raise JeirtError(f"{onnx_path}: has no feature output {self.feature_output!r} (outputs: {sorted(outputs)})")
            shape = outputs[self.feature_output].shape
            if self.feature_dim < 1 or len(shape) != 2 or (isinstance(shape[1], int) and shape[1] != self.feature_dim):
                raise JeirtError(
                    f"{onnx_path}: feature output {self.feature_output!r} has shape {shape}, router.json says "
                    f"feature_dim {self.feature_dim}"
                )

    def encode(self, texts: Sequence[str], batch_size: Optional[int] = None) -> np.ndarray:
        """Question vectors (N, d) float32 for already validated texts, in input order.

        `batch_size` None uses the router's own (manifest encoder.batch_size, else DEFAULT_BATCH_SIZE).
        """
        return self._run(texts, batch_size, with_features=False)[0]

    def encode_with_features(
        self, texts: Sequence[str], batch_size: Optional[int] = None
    ) -> tuple[np.ndarray, Optional[np.ndarray]]:
        """(question vectors (N, d), encoder features (N, p) or None when the graph exposes none)."""
        return self._run(texts, batch_size, with_features=self.feature_output is not None)

    def _run(
        self, texts: Sequence[str], batch_size: Optional[int], with_features: bool
    ) -> tuple[np.ndarray, Optional[np.ndarray]]:
        size = self.batch_size if batch_size is None else batch_size
        batch_size = bounded_int(size, "batch_size", 1, MAX_CHUNK_ROWS)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        features = np.empty((len(texts), self.feature_dim), dtype=np.float32) if with_features else None
        outputs = [self.output_name] + ([str(self.feature_output)] if with_features else [])
        if not texts:
            return out, features
        token_ids = self._token_ids(list(texts))
        lengths = np.fromiter((len(ids) for ids in token_ids), dtype=np.int64, count=len(token_ids))
        # Sorting by length keeps padding small inside each batch; results go back to their input positions.
        order = np.argsort(lengths, kind="stable")
        for start in range(0, len(order), batch_size):
            rows = order[start : start + batch_size]
            width = int(lengths[rows].max())
            ids = np.full((len(rows), width), self.pad_id, dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            for row, text_index in enumerate(rows):
                n = int(lengths[text_index])
                ids[row, :n] = token_ids[text_index]
                mask[row, :n] = 1
            feeds = dict(zip(self.input_names, (ids, mask)))
            try:
                results = self.session.run(outputs, feeds)
            except Exception as err:  # onnxruntime's own error types (e.g. a token id outside the graph's table)
                raise JeirtError(f"the encoder failed on texts {sorted(rows.tolist())[:5]}: {err}") from err
            vectors = results[0]
            if vectors.shape != (len(rows), self.dim):
                raise JeirtError(f"encoder returned shape {vectors.shape}, expected ({len(rows)}, {self.dim})")
            out[rows] = vectors
            if features is not None:
                features[rows] = results[1]
        if not np.isfinite(out).all():
            bad = int(np.flatnonzero(~np.isfinite(out).all(axis=1))[0])
            raise JeirtError(f"encoder produced NaN or inf for text {bad}")
        return out, features

    def _token_ids(self, texts: list[str]) -> list[list[int]]:
        """Token ids of each (already cut) text; a text the tokenizer refuses is named by its index."""
        for i, text in enumerate(texts):
            bad = _lone_surrogate(text)
            if bad is not None:
                raise JeirtError(
                    f"text {i} is not valid Unicode: a lone surrogate {text[bad]!r} at character {bad} "
                    "(text decoded with errors='surrogateescape' or surrogatepass?)"
                )
        try:
            return [encoding.ids for encoding in self.tokenizer.encode_batch(texts)]
        except Exception as err:  # noqa: BLE001 - tokenizers raises TypeError/Exception without naming the text
            batch_error = err
        for i, text in enumerate(texts):
            try:
                self.tokenizer.encode(text)
            except Exception as err:
                raise JeirtError(f"text {i}: the tokenizer cannot encode it ({err})") from err
        raise JeirtError(f"the tokenizer failed on this batch of texts ({batch_error})") from batch_error


def _lone_surrogate(text: str) -> Optional[int]:
    """Index of the first lone surrogate code point in `text` (not encodable as UTF-8), or None."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        return int(err.start)
    return None


def _pad_id(tokenizer: Any) -> int:
    """The tokenizer's own pad id; the attention mask hides padding, so any valid id would do."""
    padding = tokenizer.padding
    if padding:
        return int(padding["pad_id"])
    for token in ("[PAD]", "<pad>"):
        token_id = tokenizer.token_to_id(token)
        if token_id is not None:
            return int(token_id)
    return 0
