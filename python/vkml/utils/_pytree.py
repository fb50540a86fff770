"""vkml.utils._pytree: torch.utils._pytree's nested containers of leaves -- tuples, lists, dicts
(OrderedDict, defaultdict), named tuples and deques are nodes, everything else (tensors, numbers,
None) a leaf, in torch's order (a dict's in insertion order). vk.func's transforms take and give
such trees (a dict of parameters in, a dict of gradients out). Every walk keeps its own stack: a
tree nested deeper than Python's recursion limit is flattened and rebuilt."""

import collections
import dataclasses

__all__ = ["LeafSpec", "TreeSpec", "register_pytree_node", "tree_all", "tree_any", "tree_flatten", "tree_leaves",
           "tree_map", "tree_map_only", "tree_structure", "tree_unflatten"]


@dataclasses.dataclass(frozen=True)
class _Node:
    flatten: object    # obj -> (children, context)
    unflatten: object  # (children, context) -> obj


_NODES = {}


def register_pytree_node(cls, flatten_fn, unflatten_fn, *, serialized_type_name=None, to_dumpable_context=None,
                         from_dumpable_context=None, flatten_with_keys_fn=None):
    """Makes cls a node: flatten_fn(obj) gives (children, context), unflatten_fn(children, context)
    rebuilds it. The serialization and key-path arguments are accepted for torch's signature."""
    if cls in _NODES:
        raise ValueError(f"{cls} is already registered as pytree node.")
    _NODES[cls] = _Node(flatten_fn, unflatten_fn)


register_pytree_node(tuple, lambda t: (list(t), None), lambda c, _: tuple(c))
register_pytree_node(list, lambda t: (list(t), None), lambda c, _: list(c))
register_pytree_node(dict, lambda d: (list(d.values()), list(d)), lambda c, keys: dict(zip(keys, c)))
register_pytree_node(collections.OrderedDict, lambda d: (list(d.values()), list(d)),
                     lambda c, keys: collections.OrderedDict(zip(keys, c)))
register_pytree_node(collections.defaultdict, lambda d: (list(d.values()), [d.default_factory, list(d)]),
                     lambda c, ctx: collections.defaultdict(ctx[0], zip(ctx[1], c)))
register_pytree_node(collections.deque, lambda d: (list(d), d.maxlen), lambda c, maxlen: collections.deque(c, maxlen))
_NAMEDTUPLE = _Node(lambda t: (list(t), type(t)), lambda c, cls: cls(*c))


def _is_namedtuple(obj):
    return isinstance(obj, tuple) and hasattr(type(obj), "_fields") and type(obj) not in _NODES


def _node_of(obj, is_leaf):
    """(the node kind of obj, the type its spec records: collections.namedtuple for every named
    tuple, as torch's), or (None, None) where obj is a leaf."""
    if is_leaf is not None and is_leaf(obj):
        return None, None
    node = _NODES.get(type(obj))
    if node is not None:
        return node, type(obj)
    if _is_namedtuple(obj):
        return _NAMEDTUPLE, collections.namedtuple
    return None, None


@dataclasses.dataclass(frozen=True)
class _Entry:
    """One node of a flattened tree, in pre-order: its type, context and number of children (a
    leaf: type None)."""
    type: type
    context: object
    num_children: int


class TreeSpec:
    """A tree's shape without its leaves: its nodes in pre-order."""

    def __init__(self, entries):
        self._entries = tuple(entries)

    @property
    def type(self):
        return self._entries[0].type

    @property
    def context(self):
        return self._entries[0].context

    @property
    def num_nodes(self):
        return len(self._entries)

    @property
    def num_leaves(self):
        return sum(1 for e in self._entries if e.type is None)

    @property
    def num_children(self):
        return self._entries[0].num_children

    def children(self):
        """The spec of each child: consecutive runs of the pre-order entries."""
        specs, at = [], 1
        for _ in range(self.num_children):
            end, open_ = at, 1
            while open_:
                open_ += self._entries[end].num_children - 1
                end += 1
            specs.append(TreeSpec(self._entries[at:end]))
            at = end
        return specs

    children_specs = property(children)

    def child(self, index):
        return self.children()[index]

    def is_leaf(self):
        return self._entries[0].type is None

    def unflatten(self, leaves):
        return tree_unflatten(leaves, self)

    def __eq__(self, other):
        return isinstance(other, TreeSpec) and self._entries == other._entries

    def __repr__(self):
        out, open_ = [], []  # open_: [children still to write, whether one was written] per open node
        for e in self._entries:
            if open_:
                out.append(", " if open_[-1][1] else "")
                open_[-1][0] -= 1
                open_[-1][1] = True
            if e.type is None:
                out.append("*")
            else:
                out.append(f"TreeSpec({e.type.__name__}, {e.context}, [")
                open_.append([e.num_children, False])
            while open_ and open_[-1][0] == 0:
                out.append("])")
                open_.pop()
        return "".join(out)


def LeafSpec():
    """The spec of a single leaf."""
    return TreeSpec([_Entry(None, None, 0)])


def tree_flatten(tree, is_leaf=None):
    """(the leaves in order, the tree's spec)."""
    leaves, entries, stack = [], [], [tree]
    while stack:
        obj = stack.pop()
        node, kind = _node_of(obj, is_leaf)
        if node is None:
            leaves.append(obj)
            entries.append(_Entry(None, None, 0))
            continue
        children, context = node.flatten(obj)
        entries.append(_Entry(kind, context, len(children)))
        stack.extend(reversed(children))
    return leaves, TreeSpec(entries)


def tree_unflatten(leaves, treespec):
    """The tree of treespec's shape holding leaves."""
    if not isinstance(treespec, TreeSpec):
        raise TypeError(f"tree_unflatten(leaves, treespec): Expected `treespec` to be instance of TreeSpec but got "
                        f"item of type {type(treespec)}.")
    leaves = list(leaves)
    if len(leaves) != treespec.num_leaves:
        raise ValueError(f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} but the spec refers to a "
                         f"pytree that holds {treespec.num_leaves} items ({treespec}).")
    built = []  # subtrees finished, the last one on top; entries taken from the last
    for entry in reversed(treespec._entries):
        if entry.type is None:
            built.append(leaves.pop())
            continue
        children = [built.pop() for _ in range(entry.num_children)]
        node = _NODES.get(entry.type, _NAMEDTUPLE)
        built.append(node.unflatten(children, entry.context))
    return built[0]


def tree_leaves(tree, is_leaf=None):
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree, is_leaf=None):
    return tree_flatten(tree, is_leaf)[1]


def tree_map(func, tree, *rests, is_leaf=None):
    """tree with each leaf x replaced by func(x, *the leaves at x's place in rests)."""
    leaves, spec = tree_flatten(tree, is_leaf)
    others = [_flatten_like(r, spec, is_leaf) for r in rests]
    return tree_unflatten([func(*xs) for xs in zip(leaves, *others)], spec)


def tree_map_only(type_or_types, func, tree, is_leaf=None):
    """tree_map applying func only to leaves of the given type(s)."""
    return tree_map(lambda x: func(x) if isinstance(x, type_or_types) else x, tree, is_leaf=is_leaf)


def tree_all(pred, tree, is_leaf=None):
    return all(map(pred, tree_leaves(tree, is_leaf)))


def tree_any(pred, tree, is_leaf=None):
    return any(map(pred, tree_leaves(tree, is_leaf)))


def _flatten_like(tree, spec, is_leaf=None):
    leaves, other = tree_flatten(tree, is_leaf)
    if other != spec:
        raise ValueError(f"Tree structures do not match: expected {spec}, got {other}")
    return leaves


def _broadcast_to_and_flatten(prefix, spec):
    """The leaves of `prefix` -- a tree whose leaves stand for whole subtrees of spec's tree (an
    int for a dict of tensors) -- repeated over those subtrees' leaves, in spec's leaf order; None
    where prefix's shape does not fit spec's."""
    out, stack = [], [(prefix, spec)]
    while stack:
        p, sub = stack.pop()
        node, kind = _node_of(p, None)
        if node is None:
            out.extend([p] * sub.num_leaves)
            continue
        children, context = node.flatten(p)
        if sub.is_leaf() or kind is not sub.type or context != sub.context or len(children) != sub.num_children:
            return None
        stack.extend(reversed(list(zip(children, sub.children()))))
    return out
