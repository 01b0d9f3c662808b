# ruff: noqa: E501  (the passages are data: re-wrapping them would change the frozen corpus)
"""Builds the token corpus: texts of every kind a history holds, deterministic for a given tree.

Used twice: tests/history/test_encodings.py checks our o200k_base and cl100k_base
against tiktoken's own definitions on it, and `--calibrate TOKENIZER_JSON` writes
tests/data/token_corpus.jsonl, the frozen corpus (with reference counts) that
the Claude estimate is calibrated and tested on.

    .venv/bin/python scripts/token_corpus.py --stats
    /tmp/calib/bin/python scripts/token_corpus.py --calibrate anthropic/tokenizer.json
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FROZEN = ROOT / "tests" / "data" / "token_corpus.jsonl"
SOURCES = ("README.md", "protos/pioneer/v1", "pioneer_grpc", "clients/go/contract", "clients/rust/tests")
REPO_SAMPLE = 220
SUFFIXES = {".md", ".proto", ".py", ".go", ".rs", ".toml"}

# Short passages written for this corpus, one per language.
PASSAGES = {
    "de": "Der Dienst lädt die Geschichte eines Gesprächs, zählt ihre Token und entscheidet, ob eine "
    "Zusammenfassung nötig ist. Ältere Einträge werden nie gelöscht; sie werden nur nicht mehr gesendet, "
    "wenn eine Zusammenfassung sie abdeckt. Größere Fenster erlauben längere Verläufe, kosten aber mehr.",
    "fr": "Le serveur compile l'invite système en deux moitiés : une partie stable, mise en cache par le "
    "fournisseur, puis une partie dynamique qui change à chaque tour. Les références d'artefacts ne "
    "transportent jamais d'octets, seulement des métadonnées : nom, type, taille et empreinte.",
    "es": "Cuando el historial supera el ochenta por ciento del presupuesto, el resumidor lo comprime a "
    "cerca del diez por ciento. Si falla, se conservan los turnos más recientes que caben, en orden, y el "
    "informe explica qué se descartó y por qué. ¿Cuántos tokens ocupa cada mensaje? Depende del modelo.",
    "pt": "Cada réplica é sem estado: todas compartilham o PostgreSQL, e os eventos do manifesto cruzam "
    "réplicas por meio de notificações que levam apenas o identificador do evento. Nada se perde quando "
    "um observador se reconecta, porque ele retoma a partir do último evento que recebeu.",
    "ru": "Сервер считает токены один раз, при добавлении записи, и хранит результат. Загрузка истории "
    "никогда не токенизирует текст заново. Если модель потока меняется, записи пересчитываются один раз, "
    "по требованию, в токенизаторе новой модели. Окно контекста у разных моделей разное.",
    "uk": "Кожна помилка має стабільну причину, а для полів — перелік усіх порушень. Клієнт на Go або Rust "
    "отримує ті самі відповіді, що й клієнт на Python, бо контракт описано в protobuf.",
    "el": "Η προσωρινή μνήμη του παρόχου διαβάζεται μόνο όταν το σταθερό πρόθεμα είναι αρκετά μεγάλο. "
    "Κάτω από το ελάχιστο μέγεθος, ένα σημείο διακοπής κοστίζει μια εγγραφή που δεν διαβάζεται ποτέ.",
    "zh": "服务器在追加条目时只计算一次令牌数并保存。加载历史时从不重新分词。当线程的模型从一个家族切换到另一个家族时,"
    "旧条目会按新模型的分词器懒惰地重新计数一次。长对话超过预算的百分之八十时,摘要模型会把它压缩到大约百分之十。",
    "ja": "履歴の読み込みは保存されたトークン数だけを使います。予算の八割を超えると要約を作り、失敗したときは収まる最新の"
    "ターンだけを順番どおりに残します。ツール呼び出しとその結果は決して切り離しません。",
    "ko": "각 공급자는 대화 규칙이 다릅니다. 빈 메시지는 보내지 않고, 모든 도구 호출에는 결과가 있어야 하며, 중단된 호출에는 "
    "합성된 결과를 붙이고 보고서에 그 사실을 적습니다. 캐시 중단점은 최대 네 개까지 둘 수 있습니다.",
    "ar": "يحسب الخادم الرموز مرة واحدة عند إضافة الرسالة ويحفظها. عندما يتجاوز السجل ثمانين في المئة من الميزانية، "
    "يضغطه نموذج التلخيص إلى نحو عشرة في المئة، وإذا فشل يحتفظ بأحدث الأدوار التي تتسع.",
    "hi": "सर्वर हर प्रविष्टि के टोकन एक बार गिनता है और उन्हें सहेजता है। इतिहास लोड करते समय पाठ को फिर से टोकन में नहीं "
    "बाँटा जाता। जब मॉडल बदलता है, पुरानी प्रविष्टियाँ नए टोकनाइज़र में एक बार गिनी जाती हैं।",
    "th": "เซิร์ฟเวอร์นับโทเค็นครั้งเดียวเมื่อเพิ่มข้อความและเก็บผลไว้ การโหลดประวัติไม่ตัดคำใหม่อีก",
    "vi": "Máy chủ đếm token một lần khi thêm mục và lưu lại. Khi tải lịch sử, văn bản không bao giờ bị tách "
    "token lại. Khi mô hình thay đổi, các mục cũ được đếm lại một lần theo bộ tách từ mới.",
    "tr": "Sunucu, her girdinin belirteçlerini eklendiğinde bir kez sayar ve saklar. Geçmiş yüklenirken metin "
    "yeniden bölünmez; model ailesi değişirse eski girdiler yeni modelin sayacıyla bir kez yeniden sayılır.",
    "pl": "Każdy błąd ma stały powód, a błędy pól wymieniają wszystkie naruszenia naraz. Żądanie anulowane w "
    "połowie nie zostawia po sobie połączenia, transakcji ani blokady.",
}


def _chunks(text: str, rng: random.Random) -> Iterator[str]:
    lines = text.splitlines(keepends=True)
    i = 0
    while i < len(lines):
        size = rng.choice((200, 500, 1200, 3000))
        chunk: list[str] = []
        length = 0
        while i < len(lines) and length < size:
            chunk.append(lines[i])
            length += len(lines[i])
            i += 1
        piece = "".join(chunk)
        if piece.strip():
            yield piece


def repo_texts(rng: random.Random) -> Iterator[tuple[str, str]]:
    for source in SOURCES:
        base = ROOT / source
        files = [base] if base.is_file() else sorted(p for p in base.rglob("*") if p.suffix in SUFFIXES)
        for path in files:
            if "_pb2" in path.name:
                continue
            kind = "prose" if path.suffix == ".md" else "code"
            for piece in _chunks(path.read_text(encoding="utf-8"), rng):
                yield kind, piece


def synthetic_texts(rng: random.Random) -> Iterator[tuple[str, str]]:
    for lang, text in sorted(PASSAGES.items()):
        kind = (
            "cjk"
            if lang in ("zh", "ja", "ko")
            else "prose"
            if lang in ("de", "fr", "es", "pt", "vi", "tr", "pl")
            else "other_script"
        )
        yield kind, text
        yield kind, text + "\n\n" + text[: len(text) // 2]
    for i in range(40):
        args = {
            "path": f"/work/src/module_{i}/file_{rng.randrange(1000)}.py",
            "line": rng.randrange(1, 5000),
            "pattern": rng.choice(["def \\w+\\(", "TODO|FIXME", "import (os|sys)"]),
            "values": [rng.randrange(10**6) for _ in range(rng.randrange(1, 8))],
            "flag": rng.random() < 0.5,
        }
        yield "code", json.dumps(args, indent=rng.choice([None, 2]))
    for i in range(20):
        rows = [
            f"{rng.randrange(10**4):>6} | {rng.random():.4f} | item-{rng.randrange(999)}" for _ in range(8)
        ]
        yield "code", "\n".join(rows)
        stamp = f"2026-{1 + i % 12:02d}-{1 + i:02d}T{i % 24:02d}:{i:02d}:00Z"
        yield "code", f"{stamp} INFO rpc=/pioneer.v1.HistoryService/AppendEntries code=OK duration_ms={i * 7}"


def corpus_texts(seed: int = 16) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    repo = list(repo_texts(rng))
    # A sample of the tree keeps the frozen file small; the order stays the tree's.
    keep = sorted(rng.sample(range(len(repo)), min(len(repo), REPO_SAMPLE)))
    return [*(repo[i] for i in keep), *synthetic_texts(rng)]


def edge_texts(seed: int = 16) -> list[str]:
    """Texts that stress a pre-tokenizer: every Unicode plane, marks, digits, whitespace runs, specials."""
    rng = random.Random(seed)
    ranges = [
        (0x20, 0x7E),
        (0xA0, 0x24F),
        (0x370, 0x6FF),
        (0x900, 0x97F),
        (0x3040, 0x30FF),
        (0x4E00, 0x9FFF),
        (0xAC00, 0xD7A3),
        (0x1F300, 0x1FAFF),
        (0x300, 0x36F),
        (0x10000, 0x1007F),
    ]
    texts = [
        "",
        " ",
        "\n",
        "\t\t",
        "  \n\n  ",
        "<|endoftext|>",
        "<|endofprompt|> x",
        "1234567890" * 5,
        "don't I'LL we've THEY'RE",
        "a\r\nb\rc",
        "x" * 5000,
        "😀" * 50,
        "é" + "\u0301" * 10,
    ]
    for _ in range(300):
        parts = []
        for _ in range(rng.randrange(1, 40)):
            low, high = rng.choice(ranges)
            parts.append("".join(chr(rng.randint(low, high)) for _ in range(rng.randrange(1, 12))))
            parts.append(rng.choice(["", " ", "  ", "\n", "\t", ". ", ", ", "'s ", "123"]))
        texts.append("".join(parts))
    return texts


def calibrate(tokenizer_json: Path) -> None:
    from tokenizers import Tokenizer  # only where the reference tokenizer is installed

    reference = Tokenizer.from_str(tokenizer_json.read_text(encoding="utf-8"))
    FROZEN.parent.mkdir(parents=True, exist_ok=True)
    with FROZEN.open("w", encoding="utf-8") as out:
        for kind, text in corpus_texts():
            count = len(reference.encode(text).ids)
            out.write(
                json.dumps({"kind": kind, "text": text, "claude_legacy": count}, ensure_ascii=False) + "\n"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calibrate", type=Path, help="Anthropic's legacy tokenizer.json")
    parser.add_argument("--stats", action="store_true")
    args = parser.parse_args()
    if args.calibrate:
        calibrate(args.calibrate)
    texts = corpus_texts()
    chars = sum(len(t) for _, t in texts)
    print(f"{len(texts)} corpus texts, {chars} characters; {len(edge_texts())} edge texts", file=sys.stderr)


if __name__ == "__main__":
    main()
