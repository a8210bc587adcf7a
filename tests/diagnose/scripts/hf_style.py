"""Tokenized text batches trained the way HuggingFace's run_clm_no_trainer.py trains.

Test data for the audit's hand count (tests/diagnose/test_scripts.py): a toy
whitespace tokenizer, a dataset of tokenized examples, a padding collator that returns
a ``BatchEncoding``-like mapping with its own ``.to(device)``, a tiny language model with
tied input and output embeddings, gradient accumulation and clipping, and an
evaluation that accumulates the loss on the device and reads it once. No transformers,
no downloads. Lines the count refers to end in ``# audit: NAME``.
"""

from __future__ import annotations

import math
from collections import UserDict

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

TEXT = [
    "the quick brown fox jumps over the lazy dog",
    "a stitch in time saves nine",
    "all that glitters is not gold",
    "the early bird catches the worm",
]


class Tokenizer:
    """Whitespace tokens; id 0 is padding."""

    def __init__(self, texts):
        words = sorted({w for text in texts for w in text.split()})
        self.vocab = {w: i + 1 for i, w in enumerate(words)}
        self.pad_token_id = 0

    def __call__(self, text):
        return {"input_ids": [self.vocab[w] for w in text.split()]}


class TokenizedDataset(Dataset):
    def __init__(self, texts, tokenizer, repeat):
        self.examples = [tokenizer(t) for t in texts] * repeat

    def __len__(self):
        return len(self.examples)

    def __getitem__(self, i):
        return self.examples[i]


class BatchEncoding(UserDict):
    """Like transformers' BatchEncoding: a dict of tensors that moves itself."""

    def to(self, device):
        self.data = {k: v.to(device=device) for k, v in self.data.items()}  # audit: batch_to
        return self


class DataCollatorForLanguageModeling:
    """Pads to the longest example; labels are the inputs with padding set to -100."""

    def __init__(self, tokenizer):
        self.pad = tokenizer.pad_token_id

    def __call__(self, features):
        longest = max(len(f["input_ids"]) for f in features)
        ids = [f["input_ids"] + [self.pad] * (longest - len(f["input_ids"])) for f in features]
        input_ids = torch.tensor(ids, dtype=torch.long)
        attention_mask = (input_ids != self.pad).long()
        labels = input_ids.clone()
        labels[attention_mask == 0] = -100  # audit: mask_labels
        return BatchEncoding(
            {"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels}
        )


class TinyLM(nn.Module):
    """Embeddings, one mixing layer, and an output layer tied to the embeddings."""

    def __init__(self, vocab_size, hidden):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, hidden)
        self.mix = nn.Linear(hidden, hidden)
        self.norm = nn.LayerNorm(hidden)
        self.lm_head = nn.Linear(hidden, vocab_size, bias=False)
        self.lm_head.weight = self.embed.weight  # tied, as in GPT-2

    def forward(self, input_ids, attention_mask, labels):
        hidden = self.norm(torch.tanh(self.mix(self.embed(input_ids))))
        hidden = hidden * attention_mask.unsqueeze(-1)
        logits = self.lm_head(hidden)
        loss = nn.functional.cross_entropy(
            logits[:, :-1].reshape(-1, logits.size(-1)), labels[:, 1:].reshape(-1)
        )
        return loss, logits


def main():
    torch.manual_seed(0)
    device = torch.device("cpu")
    tokenizer = Tokenizer(TEXT)
    train_dataset = TokenizedDataset(TEXT, tokenizer, repeat=4)
    eval_dataset = TokenizedDataset(TEXT, tokenizer, repeat=1)
    collator = DataCollatorForLanguageModeling(tokenizer)
    train_dataloader = DataLoader(train_dataset, shuffle=True, collate_fn=collator, batch_size=4)
    eval_dataloader = DataLoader(eval_dataset, collate_fn=collator, batch_size=4)
    model = TinyLM(len(tokenizer.vocab) + 1, hidden=8)
    model.to(device)  # audit: model_to
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    accumulation_steps = 2
    completed_steps = 0
    for epoch in range(2):
        model.train()
        for step, batch in enumerate(train_dataloader):
            batch = batch.to(device)
            loss, _ = model(**batch)
            (loss / accumulation_steps).backward()
            if (step + 1) % accumulation_steps == 0:
                nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                optimizer.zero_grad()
                completed_steps += 1
                if completed_steps % 2 == 0:
                    print(f"step {completed_steps}: loss {loss.detach().float():.4f}")  # audit: log
        model.eval()
        eval_loss = torch.zeros((), device=device)
        correct = 0
        for batch in eval_dataloader:
            batch = batch.to(device)
            with torch.no_grad():
                loss, logits = model(**batch)
            eval_loss += loss.detach()
            mask = batch["attention_mask"].bool()
            correct += (logits.argmax(-1)[mask] == batch["input_ids"][mask]).sum()  # audit: masked
        perplexity = math.exp(eval_loss / len(eval_dataloader))  # audit: perplexity
        matches = int(correct)  # audit: correct
        print(f"epoch {epoch}: perplexity {perplexity:.2f}, matches {matches}")


if __name__ == "__main__":
    main()
