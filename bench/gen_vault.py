"""A deterministic synthetic vault for the benchmarks: a mixed Chinese/English diary plus a wiki.

Run::

    /work/venv/bin/python bench/gen_vault.py /tmp/vault-10k --entries 10000 --seed 0

or, from Python, ``generate(Path("/tmp/vault-10k"), 10_000, seed=0)``.

The vault has exactly ``entries`` indexable entries: about 97% are ``## HH:MM`` diary entries
(about 8 a day, Poisson-spread, on consecutive days ending 2026-11-28) and about 3% are
``## item`` sections spread over up to 50 ``wiki/<topic>.md`` files. Text is drawn from
Zipf-distributed vocabularies, so term frequencies look like real prose: English from ~300
common words written here plus a few thousand syllable-built words, Chinese from a few hundred
common characters written here (1- and 2-character words). Entries carry ``#tags``,
``[[file:topic]]`` links and ``<!-- wikimem: … -->`` metadata comments at realistic rates.
No external data is read: the same ``(entries, seed)`` always writes byte-identical files.
"""

from __future__ import annotations

import argparse
import itertools
import math
import random
import shutil
import sys
import time
from collections import Counter
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

END_DAY = date(2026, 11, 28)
ENTRIES_PER_DAY = 8
WIKI_SHARE = 0.03
MAX_TOPICS = 50
ZIPF_S = 1.05
VOCAB_SEED = 20261128  # the vocabulary is fixed; ``seed`` only changes the corpus drawn from it

# Ordered roughly by frequency: function words first, then diary-ish content words and names.
CORE_EN = """
the and to of a i in was it for that on with my at is this but we be so have had
not from up all about out just one after then were an by they are me today more
some time there like got what back when will new day work need two did our went
again still first next morning night week went much long good first three
meeting coffee lunch dinner breakfast walk run ran running home office team call
email review code bug fix deploy release test tests build server database query
index search memory note notes diary wiki project plan plans design draft doc
read reading book books write writing wrote train trip travel flight hotel
station bus metro bike weather rain sun cold warm tired sleep slept woke early
late evening afternoon weekend monday tuesday wednesday thursday friday saturday
sunday friend friends family mother father sister brother cat dog doctor dentist
tooth teeth knee calf back pain gym stretch race marathon pace km minutes hours
money bank budget rent bill paid pay price market shop bought buy cooked cook
rice noodles soup tea beer wine cake fruit apple bread cheese chicken fish
movie music song concert game games played play park river lake mountain hill
garden flowers tree city street road car parking phone laptop screen keyboard
battery charger camera photo photos picture video message chat slack ticket
issue issues customer customers payment payments invoice refund order orders
service services api client latency timeout retry retries error errors log logs
alert alerts incident outage fixed broken slow fast small big quick easy hard
better worse happy sad angry calm busy free quiet loud clean dirty cheap
expensive finally maybe almost really probably already never always often
sometimes usually together alone around near far across inside outside
mia lin zhou wang chen li anna tom sam ben kate leo max
""".split()

_ONSETS = (
    "b c d f g h j k l m n p r s t v w z br cr dr fl gr pl pr st tr sh ch th sk sl sp"
).split()
_VOWELS = "a e i o u ai ea oo ou ie".split()
_CODAS = ["", "", "", "n", "r", "l", "s", "t", "m", "nd", "st", "ck", "ng", "rt"]

# A few hundred common characters, written out by hand (no external data).
CORE_ZH = (
    "的一是不了人我在有他这中大来上个国到说们为子和你地出道也时年得就那要下以生会自着去之过家学"
    "对可她里后小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前所本见经头面"
    "公同三已老从动两长知民样现分将外但身些与高意进把法此实回二理美点月明社长电最真正新记者机气"
    "问定力代员门常先海通教儿原东声提立及比金加水化色光各话并期名计位物路级少图山统接知较将组见"
    "跑步咖啡早饭午饭晚饭猫狗朋友周末上班下班会议代码修复服务数据客户支付退款医生牙齿膝盖小腿"
    "睡觉醒来下雨晴天冷热累开心难过城市河边公园地铁火车飞机酒店旅行书读写笔记项目计划设计测试"
    "问题错误日志告警上线发布版本接口延迟重试超时索引搜索记忆妈妈爸爸姐姐哥哥吃喝买卖钱银行"
    "预算房租账单菜饭面汤茶酒蛋糕水果苹果面包鸡鱼电影音乐歌游戏山湖花树街车手机电脑屏幕键盘"
    "照片视频消息聊天马拉松配速公里分钟小时周一周二周三周四周五周六周日今晚昨早"
)

TAGS = (
    "running work 猫 payment health reading travel food family money music code "
    "incident idea todo 周末 读书 跑步 旅行 工作 家人 movie garden learning sleep dentist"
).split()
TOPICS = (
    "health people places preferences projects books music travel food finance work "
    "running cats family friends tools editor languages recipes movies games garden "
    "home car bike phone laptop habits goals ideas questions meetings clients payments "
    "servers database search memory writing learning chinese english math history art "
    "photos weather city river doctor sleep"
).split()
OWNERS = ("user:lin", "user:lin", "user:lin", "agent:assistant", "agent:importer")


@dataclass(frozen=True, slots=True)
class Vocab:
    """Zipf-ranked word lists and their cumulative weights (for ``random.choices``)."""

    en: tuple[str, ...]
    en_cum: tuple[float, ...]
    zh: tuple[str, ...]
    zh_cum: tuple[float, ...]


def _zipf_cum(n: int) -> tuple[float, ...]:
    return tuple(itertools.accumulate(1.0 / (rank**ZIPF_S) for rank in range(1, n + 1)))


def _syllable_words(rng: random.Random, count: int, taken: set[str]) -> list[str]:
    out: list[str] = []
    seen = set(taken)
    while len(out) < count:
        syllables = rng.choice((2, 2, 2, 3))
        word = "".join(
            rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS) for _ in range(syllables)
        )
        if 4 <= len(word) <= 12 and word not in seen:
            seen.add(word)
            out.append(word)
    return out


def build_vocab(en_words: int = 3000, zh_words: int = 3000) -> Vocab:
    """The fixed vocabulary: core words first (most frequent), generated words after."""
    rng = random.Random(VOCAB_SEED)
    core = list(dict.fromkeys(CORE_EN))
    en = core + _syllable_words(rng, en_words - len(core), set(core))
    chars = list(dict.fromkeys(CORE_ZH))
    zh: list[str] = list(chars[:120])  # the commonest characters are words on their own
    seen = set(zh)
    while len(zh) < zh_words:
        # Skew towards common characters so some bigrams recur across many entries.
        a = chars[int(len(chars) * rng.random() ** 2)]
        b = chars[int(len(chars) * rng.random() ** 1.5)]
        if a + b not in seen:
            seen.add(a + b)
            zh.append(a + b)
    rng.shuffle(zh)  # interleave 1- and 2-character words across ranks
    return Vocab(tuple(en), _zipf_cum(len(en)), tuple(zh), _zipf_cum(len(zh)))


class _Writer:
    """Draws sentences and entries from one seeded RNG."""

    def __init__(self, vocab: Vocab, seed: int, topics: list[str]) -> None:
        self.v = vocab
        self.rng = random.Random(seed)
        self.topics = topics

    def en_sentence(self) -> str:
        rng = self.rng
        words = rng.choices(self.v.en, cum_weights=self.v.en_cum, k=rng.randint(5, 16))
        for i, w in enumerate(words):
            roll = rng.random()
            if roll < 0.04:
                words[i] = w + "s"
            elif roll < 0.06:
                words[i] = w + "ing"
            elif roll < 0.08:
                words[i] = w + "ed"
        if rng.random() < 0.15:
            words.insert(rng.randrange(len(words)), str(rng.randint(2, 60)))
        return " ".join(words).capitalize() + rng.choice(".....!?")

    def zh_sentence(self) -> str:
        rng = self.rng
        words = rng.choices(self.v.zh, cum_weights=self.v.zh_cum, k=rng.randint(4, 14))
        if rng.random() < 0.2:  # an English word inside Chinese prose, as people write
            en = self.v.en[rng.randrange(150, len(self.v.en))]
            words.insert(rng.randrange(len(words)), f" {en} ")
        return "".join(words) + rng.choice("。。。，！？")

    def paragraph(self, sentences: int) -> str:
        roll = self.rng.random()
        if roll < 0.5:
            text = " ".join(self.en_sentence() for _ in range(sentences))
        elif roll < 0.8:
            text = "".join(self.zh_sentence() for _ in range(sentences))
        else:
            text = " ".join(
                self.en_sentence() if i % 2 else self.zh_sentence() for i in range(sentences)
            )
        # An indented first line would be an indented code block, which real notes rarely are.
        return text.strip()

    def decorations(self, link_p: float, tag_p: float) -> str:
        rng = self.rng
        extra = []
        if rng.random() < link_p:
            extra.append(f"See [[file:{rng.choice(self.topics)}]].")
        if rng.random() < tag_p:
            extra.extend("#" + t for t in rng.sample(TAGS, rng.randint(1, 2)))
        return (" " + " ".join(extra)) if extra else ""

    def meta(self, day: date, hhmm: str) -> str:
        rng = self.rng
        owner = rng.choice(OWNERS)
        stamp = f"{day.isoformat()}T{hhmm}:00+08:00"
        return f"<!-- wikimem: owner={owner} | source=conv_{day:%Y%m%d} | ts={stamp} -->"

    def diary_day(self, day: date, count: int) -> str:
        rng = self.rng
        minutes = sorted(rng.sample(range(6 * 60, 24 * 60), count))
        out = [f"# {day.isoformat()}\n"]
        for m in minutes:
            hhmm = f"{m // 60:02d}:{m % 60:02d}"
            body = self.paragraph(rng.randint(1, 4)) + self.decorations(0.08, 0.3)
            out.append(f"## {hhmm}\n\n{body}\n")
            if rng.random() < 0.7:
                out.append(self.meta(day, hhmm) + "\n")
        return "\n".join(out)

    def wiki_topic(self, topic: str, items: int) -> str:
        rng = self.rng
        out = [f"# {topic.capitalize()}\n"]
        headings: set[str] = set()
        for _ in range(items):
            words = [
                self.v.en[rng.randrange(100, len(self.v.en))] for _ in range(rng.randint(1, 3))
            ]
            heading = " ".join(words).capitalize()
            while heading in headings:
                heading += f" {rng.randint(2, 99)}"
            headings.add(heading)
            body = self.paragraph(rng.randint(2, 6)) + self.decorations(0.2, 0.2)
            out.append(f"## {heading}\n\n{body}\n")
            if rng.random() < 0.8:
                day = END_DAY - timedelta(days=rng.randrange(365))
                out.append(
                    self.meta(day, f"{rng.randint(8, 22):02d}:{rng.randrange(60):02d}") + "\n"
                )
        return "\n".join(out)


def plan(entries: int) -> tuple[int, int, int]:
    """(diary entries, wiki items, topic files) for a vault of ``entries`` entries."""
    wiki = max(1, round(entries * WIKI_SHARE)) if entries >= 2 else 0
    diary = entries - wiki
    topics = min(MAX_TOPICS, max(1, math.ceil(wiki / 3))) if wiki else 0
    return diary, wiki, topics


def generate(out: Path, entries: int, seed: int = 0) -> None:
    """Write a vault of exactly ``entries`` entries under ``out`` (replacing what is there)."""
    if entries < 1:
        raise ValueError(f"entries={entries!r}: expected a positive number of entries")
    out = Path(out)
    for sub in ("diary", "wiki"):
        shutil.rmtree(out / sub, ignore_errors=True)
        (out / sub).mkdir(parents=True, exist_ok=True)
    n_diary, n_wiki, n_topics = plan(entries)
    topics = list(TOPICS[:n_topics])
    writer = _Writer(build_vocab(), seed, topics or list(TOPICS[:1]))
    n_days = max(1, round(n_diary / ENTRIES_PER_DAY))
    per_day = Counter(writer.rng.randrange(n_days) for _ in range(n_diary))
    first = END_DAY - timedelta(days=n_days - 1)
    for offset in sorted(per_day):
        day = first + timedelta(days=offset)
        text = writer.diary_day(day, per_day[offset])
        (out / "diary" / f"{day.isoformat()}.md").write_text(text, encoding="utf-8")
    for i, topic in enumerate(topics):
        items = n_wiki // n_topics + (1 if i < n_wiki % n_topics else 0)
        text = writer.wiki_topic(topic, items)
        (out / "wiki" / f"{topic}.md").write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="directory to write the vault into")
    parser.add_argument("--entries", type=int, default=10_000, help="number of entries")
    parser.add_argument("--seed", type=int, default=0, help="corpus seed (default 0)")
    args = parser.parse_args(argv)
    if args.entries < 1:
        parser.error(f"--entries {args.entries!r}: expected a positive integer")
    started = time.perf_counter()
    generate(args.out, args.entries, args.seed)
    n_diary, n_wiki, n_topics = plan(args.entries)
    print(
        f"wrote {args.entries} entries ({n_diary} diary, {n_wiki} wiki in {n_topics} topics) "
        f"to {args.out} in {time.perf_counter() - started:.1f} s",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
