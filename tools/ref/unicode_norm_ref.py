#!/usr/bin/env python3
"""Fixtures of tests/test_unicode_norm.c (tests/fixtures/tokenizer/), from
two references paddlec did not write:

  - Python's unicodedata.normalize (Unicode 14.0.0 in Python 3.11, the
    version of src/data/unicode_norm_tables.h): unorm.json holds strings
    that are hard to normalize (combining marks in odd orders, blocked and
    unblocked marks, Hangul jamo and syllables, compatibility forms,
    singletons, composition exclusions, a leading non-starter) and random
    strings of such characters, each with its NFC, NFD, NFKC and NFKD;
  - Hugging Face `tokenizers` (PyPI): two tokenizer.json files trained here,
    nfkc.json (SentencePiece-style BPE with byte fallback, normalizer
    Sequence [NFKC, Prepend, Replace], a normalized added token "ﬁ" and a
    special one "<sep>") and nfc.json (Qwen 2 style: byte-level, normalizer
    NFC); unorm_cases.json holds their ids and decoded text for short texts
    and the start of mixed.txt.

Run from the repository root with the venv that has `tokenizers` (after
tools/ref/tokenizer_ref.py, whose mixed.txt is the training text):

    /work/venv/bin/python tools/ref/unicode_norm_ref.py
"""
import json
import os
import random
import unicodedata

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "fixtures", "tokenizer")
QWEN2_RX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
            r"\s*[\r\n]+|\s+(?!\S)|\s+")

TRICKY = [
    # canonical ordering: marks in odd orders, blocked and unblocked
    "e\u0301", "a\u0301\u0327", "a\u0327\u0301", "\u1e0b\u0323", "q\u0307\u0323", "a\u0302\u0323", "a\u0323\u0302",
    "e\u0301\u0301", "a\u0308\u0301\u0323", "o\u031b\u0323\u0301", "u\u0308\u0304", "\u01d6\u0323",
    "a\u05b0\u05b1\u0301\u0316", "a" + "\u0301\u0316\u0300\u0317\u0327\u0328\u0345\u0335\u0301" * 3,
    "o" + "\u0301\u0316\u0300\u0317\u0327\u0328\u0345\u0335\u0308\u05b0\u0323" * 7 + "e\u0316\u0301",
    # a leading non-starter, non-starters alone
    "\u0301e", "\u0301\u0300", "\u0327\u0301a", "\u0345", "\u0308\u0301",
    # Hangul: jamo that compose, syllables that decompose, LV + T, LVT + T
    "\u1100\u1161", "\u1100\u1161\u11a8", "\uac00\u11a8", "\uac01\u11a8", "\u1112\u1161\u11ab\u1100\u116e\u11a8",
    "한국어", "\u3131\u314f", "\uffa1\uffc2", "\u1100\u0301\u1161", "\ud7a3", "\u11a8\uac00",
    # compatibility forms
    "ﬁ", "ﬀ", "①", "⑳", "ｶ", "ｶﾞ", "ﾊﾟ", "ｱｲｳ", "Ａｂｃ１２３", "²³", "½", "™", "Ⅻ", "㍿", "㈱", "㎏", "…", "µ",
    "\u1e9b\u0323", "ǅ", "ﷺ", "𝐀𝐁𝐂", "ℌ", "\u00a0x\u2002y\u3000z", "ﬃ\u0301", "ｶ\u3099", "\u2474", "\u33ff",
    # singletons
    "Ω", "K", "Å", "\u0340", "\u0341", "\u0374", "\u1fef", "\u2000", "\u2001", "\uf900", "\ufa10", "\U0002f800",
    "\u0343", "\u037e", "\u0387",
    # composition exclusions and non-starter decompositions
    "\u0958", "\u2adc", "\ufb1d", "\u0f73", "\u0344", "\U0001d15e", "\u0f77", "\u0915\u093c", "\u05d9\u05b4",
    # compositions with a starter as second
    "\u0b47\u0b3e", "\u0b47\u0b3e\u0b57", "\u0dd9\u0dcf\u0dca", "\u1025\u102e",
    # mixed text
    "Ångström naïve café ﬁnal ①②③ ｶﾀｶﾅ 한국어 😀 e\u0301te\u0301 𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
]


def interesting():
    """Code points with a decomposition or a non-zero combining class, some
    Hangul jamo and syllables, and a few ASCII letters."""
    cps = [cp for cp in range(0x30000)
           if (unicodedata.decomposition(chr(cp)) or unicodedata.combining(chr(cp))) and not 0xD800 <= cp < 0xE000]
    cps += list(range(0x1100, 0x1113)) + list(range(0x1161, 0x1176)) + list(range(0x11A8, 0x11C3))
    cps += list(range(0xAC00, 0xD7A4, 97)) + [ord(c) for c in "aeouAEKn "]
    return cps


def unorm_cases():
    rng = random.Random(14)
    pool = interesting()
    texts = list(TRICKY)
    for _ in range(500):
        texts.append("".join(chr(rng.choice(pool)) for _ in range(rng.randint(1, 10))))
    cases = []
    for t in texts:
        c = {"text": t}
        for form in ("NFC", "NFD", "NFKC", "NFKD"):
            c[form.lower()] = unicodedata.normalize(form, t)
        cases.append(c)
    with open(os.path.join(OUT, "unorm.json"), "w", encoding="utf-8") as f:
        f.write("[\n" + ",\n".join(json.dumps(c, ensure_ascii=False) for c in cases) + "\n]\n")
    print("unorm.json: %d strings (Unicode %s)" % (len(cases), unicodedata.unidata_version))


def nfkc_style(corpus):
    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    tok.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    trainer = trainers.BpeTrainer(vocab_size=700, special_tokens=["<unk>", "<s>", "</s>"], limit_alphabet=200,
                                  show_progress=False)
    tok.train_from_iterator(corpus, trainer)
    spec = json.loads(tok.to_str())
    old = spec["model"]["vocab"]
    order = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % b for b in range(256)]
    order += [t for t, _ in sorted(old.items(), key=lambda kv: kv[1]) if t not in order]
    spec["model"]["vocab"] = {t: i for i, t in enumerate(order)}
    for a in spec["added_tokens"]:
        a["id"] = spec["model"]["vocab"][a["content"]]
    spec["decoder"] = json.loads(decoders.Sequence([
        decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(), decoders.Strip(" ", 1, 0)]).__getstate__())
    tok = Tokenizer.from_str(json.dumps(spec))
    tok.add_special_tokens([AddedToken("<sep>", special=True, normalized=False)])
    tok.add_tokens([AddedToken("ﬁ", special=False, normalized=True)])
    return tok


def nfc_style(corpus):
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_RX), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=900, special_tokens=["<|endoftext|>"], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus, trainer)
    return tok


def main():
    os.makedirs(OUT, exist_ok=True)
    unorm_cases()
    text = open(os.path.join(OUT, "mixed.txt"), encoding="utf-8").read()
    corpus = [line for line in text.split("\n") if line] + TRICKY * 3
    short = ["", " ", "ﬁne ﬁx fi", "ｶﾞｷﾞ ①② Ⅻ", "e\u0301te\u0301 cafe\u0301", "x<sep>y ﬁ<sep> fi", "한국어 \u1100\u1161",
             "\u00a0nbsp\u3000ideographic\u2002space", "Å Ω K ﬀ ㍿", "\u0301leading mark", "a\u0327\u0301 o\u031b\u0323",
             "<|endoftext|>ﬁ<|endoftext|>"]
    cases = []
    for name, tok in (("nfkc", nfkc_style(corpus)), ("nfc", nfc_style(corpus))):
        tok.save(os.path.join(OUT, name + ".json"))
        tok = Tokenizer.from_file(os.path.join(OUT, name + ".json"))
        for t in short + TRICKY + [text[:4000]]:
            enc = tok.encode(t, add_special_tokens=False)
            cases.append({"tokenizer": name, "text": t, "ids": enc.ids,
                          "decoded": tok.decode(enc.ids, skip_special_tokens=False)})
    with open(os.path.join(OUT, "unorm_cases.json"), "w", encoding="utf-8") as f:
        f.write("[\n" + ",\n".join(json.dumps(c, ensure_ascii=False) for c in cases) + "\n]\n")
    print("unorm_cases.json: %d cases; sizes:" % len(cases),
          {n: os.path.getsize(os.path.join(OUT, n + ".json")) for n in ("nfkc", "nfc")})


if __name__ == "__main__":
    main()
