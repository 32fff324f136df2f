"""Tiny models with random weights, built from a config and saved to a temporary directory (nothing is
downloaded): a Qwen3 causal LM with a word-level tokenizer holding "yes" and "no", and a BERT encoder
saved as a sentence-transformers model (mean pooling) whose tokenizer gives character offsets."""

from __future__ import annotations

from pathlib import Path

WORDS = (
    "yes no the a of to and is what which how redis cache fast slow query document instruct judge whether "
    "meets "
    "requirements based on provided note that answer can only be given web search retrieve relevant passages "
    "system user assistant queue worker job retry fails database index table row column late chunking token "
    "window"
).split()
PUNCTUATION = list(':<>".?,!;()')


def _word_level(specials: list[str], unk: str):
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

    vocab = {t: i for i, t in enumerate(specials + WORDS + PUNCTUATION)}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token=unk))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation()]
    )
    return tokenizer, vocab


def tiny_qwen3(directory: Path, seed: int = 0) -> Path:
    import torch
    from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM

    specials = ["<pad>", "<unk>", "<|im_start|>", "<|im_end|>", "<think>", "</think>"]
    backend, vocab = _word_level(specials, "<unk>")
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, pad_token="<pad>", unk_token="<unk>",
                                        additional_special_tokens=specials[2:])
    torch.manual_seed(seed)
    config = Qwen3Config(
        vocab_size=len(vocab),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        max_position_embeddings=1024,
        pad_token_id=0,
    )
    Qwen3ForCausalLM(config).eval().save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def tiny_bert_sentence_transformer(directory: Path, *, max_seq_length: int = 16, seed: int = 0) -> Path:
    """A BERT encoder (mean pooling) whose window is max_seq_length tokens including [CLS] and [SEP]."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer import modules as models
    from tokenizers import processors
    from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
    backend, vocab = _word_level(specials, "[UNK]")
    backend.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, pad_token="[PAD]", unk_token="[UNK]",
                                        cls_token="[CLS]", sep_token="[SEP]", model_max_length=max_seq_length)
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=len(vocab), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                        num_attention_heads=4, max_position_embeddings=64, pad_token_id=0)
    encoder_dir = directory / "encoder"
    BertModel(config).eval().save_pretrained(encoder_dir)
    tokenizer.save_pretrained(encoder_dir)
    transformer = models.Transformer(str(encoder_dir), max_seq_length=max_seq_length)
    pooling = models.Pooling(transformer.get_embedding_dimension(), pooling_mode="mean")
    out = directory / "st"
    SentenceTransformer(modules=[transformer, pooling], device="cpu").save(str(out))
    return out
