"""vk.nn.utils.rnn (issue #16 item 2: rnn): PackedSequence, pad_sequence, pack_padded_sequence,
pad_packed_sequence and pack_sequence, as torch.nn.utils.rnn.

A PackedSequence holds the steps of sequences sorted by decreasing length, time-major: step t
keeps the first batch_sizes[t] sequences. Packing and unpacking are one index_select each (the
indices are built from the lengths, on the host, as torch's are); the recurrent modules read it."""

from collections import namedtuple

from ... import _C

__all__ = ["PackedSequence", "pad_sequence", "pack_padded_sequence", "pad_packed_sequence", "pack_sequence"]


def _int_list(values, what):
    if isinstance(values, _C.Tensor):
        if values.ndim != 1:
            raise RuntimeError(f"{what}: expected a 1-D tensor of lengths, got {values.ndim}-D")
        return [int(v) for v in values.cpu().tolist()]
    return [int(v) for v in values]


def _long(values, device=None):
    return _C.tensor(list(values), dtype=_C.dtype.int64, device=device)


def _invert_permutation(perm):
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return inv


class PackedSequence(namedtuple("PackedSequence", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])):
    """data (sum of lengths, *), batch_sizes (an int64 CPU tensor, one entry per step),
    sorted_indices / unsorted_indices (None when the batch came sorted)."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None and sorted_indices is not None:
            unsorted_indices = _long(_invert_permutation(_int_list(sorted_indices, "PackedSequence")),
                                     sorted_indices.device)
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        move = (lambda t: None if t is None else t.to(data.device))
        return type(self)(data, self.batch_sizes, move(self.sorted_indices), move(self.unsorted_indices))

    def cpu(self):
        return self.to("cpu")

    def double(self):
        return self.to(_C.dtype.float64)

    def float(self):
        return self.to(_C.dtype.float32)

    @property
    def is_cuda(self):
        return False

    def is_pinned(self):
        return False


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stacks tensors (L_i, *) padded to the longest: (L, B, *), or (B, L, *) with batch_first."""
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    if isinstance(sequences, _C.Tensor):
        sequences = list(sequences.unbind(0))
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    trailing = tuple(sequences[0].shape[1:])
    for s in sequences:
        if tuple(s.shape[1:]) != trailing:
            raise RuntimeError(f"pad_sequence: the sequences' trailing shapes differ: {tuple(s.shape)} "
                               f"and {(sequences[0].shape[0],) + trailing}")
    max_len = max(s.shape[0] for s in sequences)
    padded = []
    for s in sequences:
        extra = max_len - s.shape[0]
        if extra:
            fill = _C.full((extra,) + trailing, padding_value, dtype=s.dtype, device=s.device)
            s = _C.cat([s, fill] if padding_side == "right" else [fill, s], 0)
        padded.append(s)
    return _C.stack(padded, 0 if batch_first else 1)


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Packs a padded batch (L, B, *) (or (B, L, *)) of sequences of the given lengths."""
    lengths = _int_list(lengths, "pack_padded_sequence")
    if batch_first:
        input = input.transpose(0, 1)
    if len(lengths) != input.shape[1]:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {len(lengths)} "
                           f"(batch_size={input.shape[1]})")
    sorted_indices = None
    if enforce_sorted:
        if any(lengths[i] < lengths[i + 1] for i in range(len(lengths) - 1)):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
                               "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence "
                               "to sidestep this requirement if you do not need ONNX exportability.")
    else:
        order = sorted(range(len(lengths)), key=lambda i: -lengths[i])  # stable, as torch's sort here
        lengths = [lengths[i] for i in order]
        sorted_indices = _long(order, input.device)
        input = input.index_select(1, sorted_indices)
    if lengths and lengths[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' "
                           "that is <= 0")
    if lengths and lengths[0] > input.shape[0]:
        raise RuntimeError(f"pack_padded_sequence: a length of {lengths[0]} is longer than the input's "
                           f"{input.shape[0]} steps")
    batch = input.shape[1]
    batch_sizes = [sum(1 for n in lengths if n > t) for t in range(lengths[0] if lengths else 0)]
    rows = [t * batch + b for t, bs in enumerate(batch_sizes) for b in range(bs)]
    flat = input.reshape((input.shape[0] * batch,) + tuple(input.shape[2:]))
    data = flat.index_select(0, _long(rows, input.device))
    return PackedSequence(data, _long(batch_sizes), sorted_indices, None)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """The inverse of pack_padded_sequence: (padded (L, B, *) or (B, L, *), lengths int64)."""
    data, batch_sizes = sequence.data, _int_list(sequence.batch_sizes, "pad_packed_sequence")
    steps = len(batch_sizes)
    if total_length is not None:
        if total_length < steps:
            raise ValueError("Expected total_length to be at least the length of the longest sequence in input, "
                             f"but got total_length={total_length} and max sequence length being {steps}")
        steps = total_length
    batch = batch_sizes[0] if batch_sizes else 0
    lengths = [sum(1 for bs in batch_sizes if bs > b) for b in range(batch)]
    trailing = tuple(data.shape[1:])
    # Every padded position reads a row of data, or the padding row appended after it.
    pad_row = data.shape[0]
    starts, at = [], 0
    for bs in batch_sizes:
        starts.append(at)
        at += bs
    rows = [starts[t] + b if t < len(batch_sizes) and b < batch_sizes[t] else pad_row
            for t in range(steps) for b in range(batch)]
    fill = _C.full((1,) + trailing, padding_value, dtype=data.dtype, device=data.device)
    padded = _C.cat([data, fill], 0).index_select(0, _long(rows, data.device))
    padded = padded.reshape((steps, batch) + trailing)
    lengths_t = _long(lengths)
    if sequence.unsorted_indices is not None:
        padded = padded.index_select(1, sequence.unsorted_indices)
        lengths_t = _long([lengths[i] for i in _int_list(sequence.unsorted_indices, "pad_packed_sequence")])
    if batch_first:
        padded = padded.transpose(0, 1)
    return padded, lengths_t


def pack_sequence(sequences, enforce_sorted=True):
    """Packs a list of tensors (L_i, *) of decreasing length (any order with enforce_sorted=False)."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)
