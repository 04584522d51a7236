"""How often the language rule of ``pipeline.scoring.language`` moves a turn away from English,
and how often it recognises other languages (the numbers in docs/languages.md).

    .venv/bin/python scripts/language_check.py --data ../shared/evaldata

English: every user and assistant turn of the cs-transcripts replay sample, the EPITOME dev
responses and the PersuasionForGood dev utterances (measured only). Other languages: support
sentences we wrote, below; the "en" list holds short replies that must stay English.
"""

from __future__ import annotations

import argparse
import csv
import json
import time
from pathlib import Path

from pipeline.scoring.language import LanguageGuesser

WRITTEN: dict[str, list[str]] = {
    "es": [
        'Lo siento mucho, ¿me da su número de pedido?',
        'Su reembolso se procesará en tres a cinco días hábiles.',
        'Entiendo su frustración, voy a revisar el estado del envío.',
        'Gracias por esperar.',
        '¿Hay algo más en lo que pueda ayudarle?',
        'Mi pedido no ha llegado y estoy harto.',
    ],
    "fr": [
        'Je suis désolé pour ce retard, pouvez-vous me donner votre numéro de commande ?',
        'Votre remboursement sera traité sous trois à cinq jours ouvrés.',
        'Je comprends votre frustration.',
        'Merci de votre patience.',
        'Puis-je vous aider avec autre chose ?',
        "Ma commande n'est jamais arrivée.",
    ],
    "de": [
        'Es tut mir leid, können Sie mir Ihre Bestellnummer geben?',
        'Ihre Rückerstattung wird in drei bis fünf Werktagen bearbeitet.',
        'Ich verstehe Ihren Ärger.',
        'Danke für Ihre Geduld.',
        'Kann ich sonst noch etwas für Sie tun?',
        'Meine Bestellung ist nie angekommen.',
    ],
    "it": [
        "Mi dispiace molto, può darmi il numero dell'ordine?",
        'Il rimborso sarà elaborato entro cinque giorni lavorativi.',
        'Capisco la sua frustrazione.',
        'Grazie per la pazienza.',
        "Posso aiutarla in qualcos'altro?",
        'Il mio ordine non è mai arrivato.',
    ],
    "pt": [
        'Sinto muito, pode me passar o número do pedido?',
        'O seu reembolso será processado em até cinco dias úteis.',
        'Entendo a sua frustração.',
        'Obrigado pela paciência.',
        'Posso ajudar em mais alguma coisa?',
        'Meu pedido nunca chegou.',
    ],
    "nl": [
        'Het spijt me, kunt u mij uw bestelnummer geven?',
        'Uw terugbetaling wordt binnen vijf werkdagen verwerkt.',
        'Ik begrijp uw frustratie.',
        'Bedankt voor uw geduld.',
        'Kan ik u ergens anders mee helpen?',
        'Mijn bestelling is nooit aangekomen.',
    ],
    "tr": [
        'Çok üzgünüm, sipariş numaranızı verebilir misiniz?',
        'İadeniz beş iş günü içinde işleme alınacak.',
        'Hayal kırıklığınızı anlıyorum.',
        'Sabrınız için teşekkürler.',
    ],
    "ru": [
        'Мне очень жаль, не могли бы вы сообщить номер заказа?',
        'Возврат средств будет обработан в течение пяти рабочих дней.',
        'Я понимаю ваше разочарование.',
        'Спасибо за терпение.',
    ],
    "pl": [
        'Bardzo mi przykro, czy może Pan podać numer zamówienia?',
        'Zwrot zostanie przetworzony w ciągu pięciu dni roboczych.',
        'Rozumiem Pana frustrację.',
        'Dziękuję za cierpliwość.',
    ],
    "ja": [
        '申し訳ございません。ご注文番号を教えていただけますか？',
        '返金は五営業日以内に処理されます。',
        'ご不便をおかけして申し訳ありません。',
    ],
    "zh": [
        '非常抱歉，请提供您的订单号。',
        '您的退款将在五个工作日内处理。',
        '感谢您的耐心等待。',
    ],
    "en": [
        'ok',
        'Thanks!',
        'Order 12345',
        'Yes please',
        'Hi!',
        'Sure, one moment.',
        'Can you confirm the address?',
        'No problem at all, have a great day!',
        'Danke',
        'Merci beaucoup!',
        'gracias',
    ],
}


def english_turns(data: Path) -> list[str]:
    out: list[str] = []
    with (data / "cs-transcripts" / "replay_turns.jsonl").open() as fh:
        for line in fh:
            out += [t["text"] for t in json.loads(line)["turns"]
                    if t["role"] in ("user", "assistant")]
    with (data / "epitome" / "dev" / "emotional-reactions-reddit.csv").open() as fh:
        out += [r["response_post"] for r in csv.DictReader(fh)]
    with (data / "persuasionforgood" / "dev" / "300_dialog.csv").open() as fh:
        out += [r["Unit"] for r in csv.DictReader(fh)]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=Path("../shared/evaldata"))
    args = ap.parse_args()
    guesser = LanguageGuesser()
    guesser.guess("warm-up", "en")
    english = english_turns(args.data)
    t0 = time.perf_counter()
    moved = [(guesser.guess(t, "en"), t) for t in english]
    ms = 1000 * (time.perf_counter() - t0) / len(english)
    moved = [(lang, t) for lang, t in moved if lang != "en"]
    print(f"English turns moved away from English: {len(moved)} of {len(english)} "
          f"({ms:.3f} ms per turn)")
    for lang, t in moved[:10]:
        print(f"  {lang}: {t[:70]!r}")
    found = total = 0
    for lang, texts in WRITTEN.items():
        for t in texts:
            got = guesser.guess(t, "en")
            if lang == "en":
                if got != "en":
                    print(f"  short English reply moved to {got}: {t!r}")
                continue
            total += 1
            found += got == lang
            if got != lang:
                print(f"  missed {lang} (kept {got}): {t!r}")
    print(f"written sentences in other languages recognised: {found} of {total}")


if __name__ == "__main__":
    main()
