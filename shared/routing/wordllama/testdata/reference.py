"""Reference vectors for shared/routing/wordllama: what the Python package computes.

The Go port (shared/routing/wordllama) must tokenize every sentence below to exactly
these ids and embed it to (nearly) this vector; reference_test.go checks both.
Regenerate after changing the sentences or the pinned version:

    python3 -m venv /tmp/wlvenv
    /tmp/wlvenv/bin/pip install wordllama==0.4.0.post1
    /tmp/wlvenv/bin/python shared/routing/wordllama/testdata/reference.py

It writes shared/routing/wordllama/testdata/reference.json (run from anywhere).

Why the tokenizer is copied into a temporary cache directory: WordLlama.load
finds the weights inside the package (wordllama/weights/) but looks for the
tokenizer in wordllama/tokenizer/ (singular), while the wheel ships it in
wordllama/tokenizers/, so it would download it from Hugging Face instead.
Loading through a cache directory holding the packaged file, with downloads
disabled, uses exactly the two files that localstack/wordllama.sh pins and
that the Go port reads, and needs no network.
"""

import hashlib
import json
import shutil
import tempfile
from pathlib import Path

import tokenizers
import wordllama
from wordllama import WordLlama

VERSION = "0.4.0.post1"
WEIGHTS = "l2_supercat_256.safetensors"
TOKENIZER = "l2_supercat_tokenizer_config.json"

LONG = (
    "Our team maintains a payments platform written mostly in Go, with a few "
    "Python services for reporting and a React front end. Last quarter we moved "
    "the ledger from a single PostgreSQL instance to a sharded cluster, and since "
    "then we see occasional double charges when a customer retries a checkout "
    "within a few seconds. The retry goes through the API gateway, reaches a "
    "Lambda function that validates the cart, and then publishes an event that "
    "the ledger service consumes. We added idempotency keys to the checkout "
    "endpoint, but the keys are stored in a cache with a five-minute expiry, and "
    "we suspect that two requests can race past the check before either writes "
    "its key. We would like a review of the design: is a conditional write in "
    "DynamoDB the right place for the idempotency record, how should the event "
    "consumer deduplicate messages that SQS delivers more than once, and what "
    "should happen when the ledger write succeeds but the acknowledgement to the "
    "client times out? Please also point out any security concerns, such as "
    "whether an attacker could replay a captured request with a new key, and "
    "suggest tests we should write: unit tests for the validation, integration "
    "tests against the local cloud, and a load test that retries aggressively. "
    "Finally, estimate the extra latency per checkout and the monthly cost at "
    "about 2,000,000 checkouts, given our current p99 of 180 ms and a budget of "
    "roughly 300 USD for the new components. Thanks in advance for any pointers "
    "you can share."
)

SENTENCES = [
    "Is my login flow safe against attackers?",
    "My program crashes when I call it twice, why?",
    "I have 100 euro. How much is it in USD?",
    "Thanks! Can you explain the second point in more detail?",
    "Security review: vulnerabilities, authentication, threat modelling",
    "Code review: bugs, readability, Go and Python functions",
    "Can you summarise this meeting and list the action items for next week?",
    "a",
    " ",
    "   \t\n  ",
    "Café au lait, s'il vous plaît — très bien: 3,50 €.",
    "e\u0301 is a decomposed é (no Unicode normalization happens)",
    "日本語のテキストも埋め込めますか？",
    "Great job 😀👍🏽 see you at 9:30!!!",
    "Привет, как дела? Ελληνικά και العربية",
    "SHOUTING IN ALL CAPS and MiXeD cAsE",
    "multiple     spaces   between    words",
    "   leading and trailing spaces   ",
    "line one\nline two\ttabbed\r\nwindows line",
    "non\u00a0breaking\u00a0space and zero\u200bwidth joiner",
    'func main() { fmt.Println("hello, world") } // Go code',
    "SELECT * FROM users WHERE id = 42; -- SQL injection?",
    "https://example.com/path?q=1&lang=en#frag",
    "3.14159 2.71828 1,000,000 #42 @user $5 100%",
    "antidisestablishmentarianism supercalifragilisticexpialidocious",
    "Special tokens in text: <s> hello </s> and <unk>.",
    "<s><s></s>x",
    LONG,
]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main() -> None:
    assert wordllama.__version__ == VERSION, wordllama.__version__
    package = Path(wordllama.__file__).parent
    weights = package / "weights" / WEIGHTS
    tokenizer = package / "tokenizers" / TOKENIZER
    with tempfile.TemporaryDirectory() as cache:
        (Path(cache) / "tokenizers").mkdir()
        shutil.copy(tokenizer, Path(cache) / "tokenizers" / TOKENIZER)
        wl = WordLlama.load("l2_supercat", dim=256, cache_dir=cache, disable_download=True)

    # One batch, as the package embeds: padding to the longest text is masked
    # out of the average, so a text's vector does not depend on its batch.
    vectors = wl.embed(SENTENCES, norm=True)
    encodings = wl.tokenize(SENTENCES)
    out = {
        "version": VERSION,
        "tokenizers": tokenizers.__version__,
        "files": {WEIGHTS: sha256(weights), TOKENIZER: sha256(tokenizer)},
        "sentences": [
            {
                "text": text,
                "ids": [i for i, m in zip(enc.ids, enc.attention_mask) if m],
                "vector": [round(float(x), 6) for x in vec],
            }
            for text, enc, vec in zip(SENTENCES, encodings, vectors)
        ],
    }
    # One sentence a line: a diff shows which sentences changed.
    sentences = out.pop("sentences")
    head = json.dumps(out, ensure_ascii=False)[:-1]
    lines = [json.dumps(s, ensure_ascii=False) for s in sentences]
    target = Path(__file__).with_name("reference.json")
    target.write_text(head + ', "sentences": [\n' + ",\n".join(lines) + "\n]}\n", encoding="utf-8")
    print(f"wrote {target}: {len(SENTENCES)} sentences")


if __name__ == "__main__":
    main()
