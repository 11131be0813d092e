"""Every label's continuation after one prompt, in one row: a label task's log-likelihoods in a third of the tokens.

A label task asks one prompt once per label. The row path (``generative.CausalAdapter._score_encoded``) runs
``prompt + label`` as a row per label, so the prompt's tokens go through the model once per label; the shared-cache
path runs the prompt once but pays a second forward with a repeated cache and a padding mask, which only long
(k-shot) prompts repay. Here one row holds the prompt and then every label's continuation, each continuation
attending to the prompt and to itself only (a 4-D attention mask: the prompt is causal, a continuation block sees
the prompt and its own earlier tokens), with its positions restarted where the prompt ends (``position_ids``), so
every continuation token sees exactly what it sees in its own row: the same log-likelihoods (to float noise) from
one forward over ``prompt + sum(labels)`` tokens instead of ``labels x prompt + sum(labels)``. lm-evaluation-harness
and the bench's bare loop run a row per label; on the bench's model this ran 2x faster than the rows.

Only for models on PyTorch's SDPA attention, where a boolean 4-D mask means "may attend" (transformers returns a
prepared 4-D mask as is); :class:`PackedScorer` also checks its first batch against the row path once and keeps
to the rows if they differ, so a model that reads the mask otherwise (remote code) loses speed, never correctness.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["PackedScorer"]

Pair = tuple[list[int], list[int]]  # (prompt tokens, continuation tokens)
AGREE = 1e-4  # nats: the first batch's largest difference from the row path that still counts as the same scores


class PackedScorer:
    """Scores groups of (prompt, continuation) pairs sharing one prompt, one packed row per group."""

    def __init__(self, model: Any, pad_id: int, rows_per_batch: int, device: str = "cpu"):
        self.model, self.pad_id, self.rows_per_batch, self.device = model, pad_id, rows_per_batch, device
        self.usable: bool | None = None if getattr(model.config, "_attn_implementation", "") == "sdpa" else False

    def scores(self, groups: Sequence[Sequence[Pair]], rows: Callable[[list[Pair]], list[float]]
               ) -> list[list[float]] | None:
        """Each group's continuation log-likelihoods, or None where packing is not usable (``rows`` then scores):
        ``rows(pairs)`` is the row path, asked once, on the first group, to check this model reads the mask."""
        if self.usable is False:
            return None
        if self.usable is None:
            first = list(groups[0])
            packed, plain = self._batch([first])[0], rows(first)
            self.usable = max(abs(a - b) for a, b in zip(packed, plain)) <= AGREE
            if not self.usable:
                return None
        order = sorted(range(len(groups)), key=lambda g: -_length(groups[g]))
        out: list[list[float]] = [[] for _ in groups]
        # a forward holds about the row path's tokens (rows / labels prompts), in forwards of equal size, the fewest
        # near that: 32 prompts of 3 labels as 11+11+10 (bench_generative, paired: 0.985x the strongest loop; as
        # 8+8+8+8 0.96x, as 16+16 0.83x)
        most = max(1, self.rows_per_batch // max(len(g) for g in groups))
        per = -(-len(order) // max(1, round(len(order) / most)))
        for b in range(0, len(order), per):
            part = order[b:b + per]
            for g, got in zip(part, self._batch([groups[g] for g in part])):
                out[g] = got
        return out

    def _batch(self, groups: Sequence[Sequence[Pair]]) -> list[list[float]]:
        import torch

        width = max(_length(g) for g in groups)
        ids = torch.full((len(groups), width), self.pad_id, dtype=torch.long)
        pos = torch.zeros((len(groups), width), dtype=torch.long)
        mask = torch.zeros((len(groups), 1, width, width), dtype=torch.bool)
        mask[:, 0, :, 0] = True  # a padding position attends somewhere: its values stay finite (never read)
        at_row: list[int] = []
        at_col: list[int] = []
        targets: list[int] = []
        owners: list[int] = []
        for r, group in enumerate(groups):
            prompt = group[0][0]
            seq, positions, n_prompt = list(prompt), list(range(len(prompt))), len(prompt)
            blocks = []
            for j, (_, cont) in enumerate(group):
                start = len(seq)
                seq += cont[:-1]  # the last token is only predicted, never fed
                positions += range(n_prompt, n_prompt + len(cont) - 1)
                blocks.append((start, len(cont) - 1))
                at_row += [r] * len(cont)
                at_col += [n_prompt - 1, *range(start, start + len(cont) - 1)]
                targets += cont
                owners += [j] * len(cont)
            n = len(seq)
            ids[r, :n] = torch.tensor(seq)
            pos[r, :n] = torch.tensor(positions)
            mask[r, 0, :n, :n] = torch.ones((n, n), dtype=torch.bool).tril()
            for start, size in blocks:  # a continuation sees the prompt and itself, not the labels before it
                mask[r, 0, start:start + size, n_prompt:start] = False
        dev = self.device
        with torch.inference_mode():
            logits = self.model(input_ids=ids.to(dev), attention_mask=mask.to(dev), position_ids=pos.to(dev),
                                use_cache=False).logits
            picked = logits[torch.tensor(at_row, device=dev), torch.tensor(at_col, device=dev)]
            logp = torch.log_softmax(picked.double(), dim=-1)
            got = logp.gather(-1, torch.tensor(targets, device=dev).unsqueeze(-1)).squeeze(-1).cpu()
        out = [[0.0] * len(g) for g in groups]
        for r, j, value in zip(at_row, owners, got.tolist()):
            out[r][j] += value
        return out


def _length(group: Sequence[Pair]) -> int:
    return len(group[0][0]) + sum(len(cont) - 1 for _, cont in group)
