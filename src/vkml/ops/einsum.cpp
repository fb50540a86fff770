// einsum (composite.h): parsed into integer labels per dim, each operand's repeated subscripts
// taken as diagonals, then the operands contracted pairwise left to right with one batched
// matmul each (batch, free and contracted labels), summing a label as soon as nothing later
// uses it. No kernel of its own: the gradient is that of diagonal, sum, permute and matmul.
#include <algorithm>
#include <map>

#include "vkml/core/shape.h"
#include "vkml/ops/composite.h"
#include "vkml/ops/linalg.h"
#include "vkml/ops/reduction.h"
#include "vkml/ops/shape.h"

namespace vk {
namespace {

using Labels = std::vector<int>;
constexpr int kEllipsisBase = 52;  // letters are 0..51 (A-Z, then a-z, as torch orders them)

int letter_label(char c, size_t pos) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return 26 + (c - 'a');
  VK_CHECK(false, RuntimeError, "einsum(): invalid subscript given at index ", pos,
           " in the equation string, subscripts must be in [a-zA-Z]");
  return -1;
}

char label_char(int l) {
  return l < 26 ? static_cast<char>('A' + l) : static_cast<char>('a' + l - 26);
}

struct Term {
  Labels letters;  // in order; -1 marks where the ellipsis sits
  bool ellipsis = false;
};

Term parse_term(const std::string& s, size_t base) {
  Term t;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '.') {
      VK_CHECK(s.compare(i, 3, "...") == 0 && !t.ellipsis, RuntimeError,
               "einsum(): found '.' for operand or output that is not part of any ellipsis, or "
               "more than one ellipsis, at index ",
               base + i);
      t.ellipsis = true;
      t.letters.push_back(-1);
      i += 2;
    } else {
      t.letters.push_back(letter_label(s[i], base + i));
    }
  }
  return t;
}

// The term's labels for a tensor of `ndim` dims; ellipsis dims right-aligned over `max_ell`.
Labels expand_term(const Term& t, int64_t ndim, int64_t max_ell, size_t operand) {
  const int64_t named = static_cast<int64_t>(t.letters.size()) - (t.ellipsis ? 1 : 0);
  VK_CHECK(t.ellipsis ? named <= ndim : named == ndim, RuntimeError,
           "einsum(): the number of subscripts in the equation (", named,
           ") does not match the number of dimensions (", ndim, ") for operand ", operand,
           t.ellipsis ? "" : " and no ellipsis was given");
  Labels out;
  for (int l : t.letters) {
    if (l >= 0) {
      out.push_back(l);
      continue;
    }
    const int64_t e = ndim - named;
    for (int64_t j = 0; j < e; ++j)
      out.push_back(kEllipsisBase + static_cast<int>(max_ell - e + j));
  }
  return out;
}

struct Operand {
  Tensor t;
  Labels labels;
};

// Repeated labels of one operand become one diagonal dim each.
void take_diagonals(Operand& o) {
  for (size_t i = 0; i < o.labels.size(); ++i) {
    for (size_t j = i + 1; j < o.labels.size(); ++j) {
      if (o.labels[i] != o.labels[j]) continue;
      VK_CHECK(o.t.size(i) == o.t.size(j), RuntimeError, "einsum(): subscript ",
               label_char(o.labels[i]), " is repeated for an operand but the sizes don't match, ",
               o.t.size(i), " != ", o.t.size(j));
      int l = o.labels[i];
      o.t = diagonal(o.t, 0, static_cast<int64_t>(i), static_cast<int64_t>(j));
      o.labels.erase(o.labels.begin() + j);
      o.labels.erase(o.labels.begin() + i);
      o.labels.push_back(l);
      i = static_cast<size_t>(-1);  // restart the scan over the new label order
      break;
    }
  }
}

// Sums the labels of o that `needed` does not hold.
void sum_unneeded(Operand& o, const std::vector<bool>& needed) {
  std::vector<int64_t> dims;
  Labels kept;
  for (size_t i = 0; i < o.labels.size(); ++i) {
    if (needed[o.labels[i]])
      kept.push_back(o.labels[i]);
    else
      dims.push_back(static_cast<int64_t>(i));
  }
  if (dims.empty()) return;
  o.t = sum(o.t, dims);
  o.labels = kept;
}

int64_t pos_of(const Labels& ls, int l) {
  return static_cast<int64_t>(std::find(ls.begin(), ls.end(), l) - ls.begin());
}

// a and b contracted over their shared labels that `needed` does not hold; the shared ones it
// holds are batch dims. Result labels: batch, then a's own, then b's own.
Operand contract(const Operand& a, const Operand& b, const std::vector<bool>& needed,
                 const std::vector<int64_t>& size) {
  Labels batch, contracted, a_only, b_only;
  for (int l : a.labels) {
    const bool shared = pos_of(b.labels, l) < static_cast<int64_t>(b.labels.size());
    (shared ? (needed[l] ? batch : contracted) : a_only).push_back(l);
  }
  for (int l : b.labels)
    if (pos_of(a.labels, l) == static_cast<int64_t>(a.labels.size())) b_only.push_back(l);
  auto arrange = [&](const Operand& o, const std::vector<const Labels*>& groups) {
    std::vector<int64_t> perm;
    Shape full, grouped;
    for (const Labels* g : groups) {
      int64_t n = 1;
      for (int l : *g) {
        perm.push_back(pos_of(o.labels, l));
        full.push_back(size[l]);
        n *= size[l];
      }
      grouped.push_back(n);
    }
    // Shared labels of size 1 in one operand broadcast to the other's size.
    return reshape(expand(permute(o.t, perm), full), grouped);
  };
  Tensor ta = arrange(a, {&batch, &a_only, &contracted});
  Tensor tb = arrange(b, {&batch, &contracted, &b_only});
  Operand r;
  Shape out;
  for (const Labels* g : {&batch, &a_only, &b_only})
    for (int l : *g) {
      r.labels.push_back(l);
      out.push_back(size[l]);
    }
  r.t = reshape(matmul(ta, tb), out);
  return r;
}

}  // namespace

Tensor einsum(const std::string& equation, const std::vector<Tensor>& operands) {
  VK_CHECK(!operands.empty(), RuntimeError, "einsum(): must provide at least one operand");
  std::string eq;
  for (char c : equation)
    if (c != ' ') eq.push_back(c);
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<Term> terms;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    terms.push_back(parse_term(lhs.substr(start, comma - start), start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  VK_CHECK(terms.size() <= operands.size(), RuntimeError,
           "einsum(): more operands were provided than specified in the equation");
  VK_CHECK(terms.size() >= operands.size(), RuntimeError,
           "einsum(): fewer operands were provided than specified in the equation");
  int64_t max_ell = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    const int64_t named =
        static_cast<int64_t>(terms[i].letters.size()) - (terms[i].ellipsis ? 1 : 0);
    if (terms[i].ellipsis) max_ell = std::max(max_ell, operands[i].ndim() - named);
  }
  std::vector<Operand> ops;
  std::vector<int64_t> size(kEllipsisBase + max_ell, -1);
  std::vector<int> count(size.size(), 0);
  for (size_t i = 0; i < terms.size(); ++i) {
    Operand o{operands[i], expand_term(terms[i], operands[i].ndim(), max_ell, i)};
    for (int l : o.labels) ++count[l];  // "ii" counts twice: implicit output leaves i out
    take_diagonals(o);
    for (size_t d = 0; d < o.labels.size(); ++d) {
      const int l = o.labels[d];
      const int64_t n = o.t.size(static_cast<int64_t>(d));
      VK_CHECK(size[l] < 0 || size[l] == n || size[l] == 1 || n == 1, RuntimeError,
               "einsum(): subscript ", l < kEllipsisBase ? std::string(1, label_char(l)) : "...",
               " has size ", n, " for operand ", i,
               " which does not broadcast with previously seen size ", size[l]);
      size[l] = std::max(size[l], n);
    }
    ops.push_back(std::move(o));
  }
  // The output: explicit after "->", else the ellipsis then the labels seen once, in order.
  Labels out;
  if (arrow != std::string::npos) {
    Term t = parse_term(eq.substr(arrow + 2), arrow + 2);
    for (int l : t.letters) {
      if (l < 0) {
        for (int64_t j = 0; j < max_ell; ++j) out.push_back(kEllipsisBase + static_cast<int>(j));
        continue;
      }
      VK_CHECK(count[l] > 0, RuntimeError, "einsum(): output subscript ", label_char(l),
               " does not appear in the equation for any input operand");
      VK_CHECK(pos_of(out, l) == static_cast<int64_t>(out.size()), RuntimeError,
               "einsum(): output subscript ", label_char(l),
               " appears more than once in the output");
      out.push_back(l);
    }
  } else {
    for (int64_t j = 0; j < max_ell; ++j) out.push_back(kEllipsisBase + static_cast<int>(j));
    for (int l = 0; l < kEllipsisBase; ++l)
      if (count[l] == 1) out.push_back(l);
  }
  // needed_after[k]: the labels the output or operands k+1.. use.
  std::vector<bool> needed(size.size(), false);
  for (int l : out) needed[l] = true;
  std::vector<std::vector<bool>> needed_after(ops.size(), needed);
  for (size_t k = ops.size(); k-- > 1;) {
    for (int l : ops[k].labels) needed[l] = true;
    needed_after[k - 1] = needed;
  }
  // Operand 0's own summed labels go first; at step k, operand k's own unused ones.
  std::vector<bool> first_needed = needed_after[0];
  Operand acc = ops[0];
  sum_unneeded(acc, first_needed);
  for (size_t k = 1; k < ops.size(); ++k) {
    std::vector<bool> keep_b = needed_after[k];
    for (int l : acc.labels) keep_b[l] = true;
    sum_unneeded(ops[k], keep_b);
    std::vector<bool> keep_a = needed_after[k];
    for (int l : ops[k].labels) keep_a[l] = true;
    sum_unneeded(acc, keep_a);
    acc = contract(acc, ops[k], needed_after[k], size);
  }
  std::vector<bool> in_out(size.size(), false);
  for (int l : out) in_out[l] = true;
  sum_unneeded(acc, in_out);
  std::vector<int64_t> perm;
  Shape shape;
  for (int l : out) {
    perm.push_back(pos_of(acc.labels, l));
    shape.push_back(size[l]);
  }
  // A label kept at size 1 in the only operand that has it broadcasts to its seen size.
  return expand(permute(acc.t, perm), shape);
}

}  // namespace vk
