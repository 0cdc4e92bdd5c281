"""Chinese grammar: the patterns for zh time expressions, the words that only look like one,
and the filler that makes a question "time only".

Patterns only; what each match means is decided in ``resolvers``.
"""

from __future__ import annotations

from .atoms import DAY_ZH, ISO, NUM_ZH, YEAR, ZH_MD
from .vocab import CN, REL_DAY, REL_TOD, TOD, LazyPattern, alt, plain

TOD_ZH = rf"(?:的?(?P<tod>{alt([w for w in TOD if not w.isascii()])}))?"
# After 上周一/周日…: 上周一共 (in all), 上周三次 (three times), 上周日记 (diary) are no days.
_WD_TAIL = (  # 周三天 is "three days a week"; 周三天气, 周日天气 are Wednesday's, Sunday's weather
    r"(?![次个遍回趟种点位名件本场顿杯批条]"
    r"|(?<=[一二三四五六])天(?![气亮黑晴阴冷热])"
    r"|(?<=一)[共起直些下样切半般定周同致会整]|(?<=日)[记志程常子期历报])"
)

# Words that contain an expression but are none. Matching them as "no window" consumes
# them: 晚上月亮 never yields 上月, 然后天气 never yields 后天, 一周三次 never yields 周三,
# 爱上周杰伦 (fell for Jay Chou) never yields 上周. 看上, 跟上, 比上 are left out: 看上周的报告,
# 跟上周一样 and 比上周 mean last week far more often than not.
_BLOCK_WORDS = (
    "马上 晚上 早上 路上 网上 身上 天上 楼上 以上 赶上 遇上 碰上 爱上 迷上 恋上 "
    "然后 之后 以后 最后 今后 随后 此后 落后 往后 过后 午后 饭后 背后 前后 先后 事后 "
    "日后 稍后 而后 其后 聪明 光明 文明 说明 "
    "证明 发明 透明 分明 表明 声明 鲜明 精明 清明 黎明 英明 简明 高明 开明 照明 阐明 注明 标明 "
    "查明 失明 指明 如今 当今 现今 迄今 古今 至今 以前 之前 从前 目前 提前 面前 眼前 当前 生前 "
    "事前 门前 跟前 空前 向前 先前 日前 此前 睡前 饭前 过去 最近 前几天 前些天 前阵子 那天 近来 "
    "近期 这几天 这些天 几天前 不久前 某天 有一天 一日三秋 明日黄花 千年 后天性 将近 接近 附近 "
    "临近 靠近 五月天 十月怀胎 "
    "三月兔 十月围城 四月物语 七月与安生"  # the March Hare; films
).split()
# 先天和后天 (nature and nurture), 这周到的服务 (周到 = attentive): words, not days.
_BLOCK_PHRASES = (
    r"先天(?:和|与|或|跟|及|、|还是)?后天|后天(?:形成|习得|培养|因素|环境)|这周到[的地]"
    r"|今日(?:头条|说法|美国|关注)|昨日重现"  # names of an app, programmes, a paper, a song
)
# 一周三次, 每周三. Tried only where a run of count characters starts: from inside a run the
# `+` would re-read the rest of it, which made a long run of numerals quadratic.
_COUNT = "0-9一两二三四五六七八九十几半整每"
_COUNTED_WEEKS = rf"(?<![{_COUNT}])[{_COUNT}]+个?(?:周|星期|礼拜)"
BLOCK = LazyPattern(rf"{_BLOCK_PHRASES}|{alt(_BLOCK_WORDS)}|{_COUNTED_WEEKS}")

# Context around an expression. "自从X", "X以来", "从X开始", "X至今" run from X to today;
# "X之后", "X之前", "X左右" are open-ended or vague: no window.
SINCE_BEFORE, FROM_BEFORE = LazyPattern(r"自从$"), LazyPattern(r"(?:从|自)$")
# 至今天 / 至今日 whole (5月3日至今天: no 天 left over), but 至今天气 is "so far" + weather.
SINCE_AFTER = LazyPattern(r"以来|至今(?:天|日)?(?!气)|到现在|到如今|到目前为止|到目前|到今天为止")
ON_AFTER = LazyPattern(r"开始|起(?![床来身码初先])")
# 11月20日起, 昨天起我就…: "from X on" without 从, when 起 ends the phrase (not 起晚了, 起飞)
FROM_ON_AFTER = LazyPattern(r"起(?=$|[\s，,。.！!？?；;、]|[的我你他她咱就都])")
LATER_AFTER = LazyPattern(r"以后|之后")
# The words that make a time expression a phrase, as "on" does in "on May 3": 在/于 before it
# (not the 在 of 现在, 正在…, nor the 于 of 关于, 对于, 由于…), 这天/那天/当天 after a day
# ("在5月4日这天", "on that day").
# They belong to its span, so the words BM25 scores are the question's own.
ON_BEFORE = LazyPattern(
    r"(?:(?<![现正存实好所自])在|(?<![关对由至属位等终基鉴处勇善乐敢便易急过])于)$"
)
# 去年的今天, 一年前的今天, 上个月的今天, 上周的今天: that period's day that is today's date.
SAME_DAY_AFTER = LazyPattern(r"的?(?:今天|今日)")
# 7月20日那周, 7月20号的那个星期: the Monday–Sunday week that holds the day (not 那周三, 那周末).
WEEK_AFTER = LazyPattern(r"的?[这那]一?个?(?:周|星期|礼拜)(?![一二三四五六七日天末])")
# 7月第二周, 七月的第一个星期, 5月最后一周, 上个月的第三个礼拜: that week of the month
# (``periods.week_of_month``); not 第一个星期一 (the first Monday) nor 第一周年. 7月第一周到第二周,
# 5月第一到第三周, 5月第一周和第二周: those weeks and the ones between them.
_NTH_NO = r"[0-9]{1,2}|[一二三四五六七八九十]{1,2}"
_NTH_WEEK = r"(?:周|星期|礼拜)(?![一二三四五六七日天末年])"
NTH_WEEK_AFTER = LazyPattern(
    rf"的?(?:第(?P<nth1>{_NTH_NO})个?(?:{_NTH_WEEK})?\s*(?:到|至|~|～|-|–|—|和|与|或)\s*)?"
    rf"(?:第(?P<nth>{_NTH_NO})个?|最后的?一?个?){_NTH_WEEK}"
)
THAT_DAY_AFTER = LazyPattern(r"(?:这|那|当)一?天(?![气空然才生下])")
# 5月4日前, 周五前要交: "before" (as 之前), where 前 ends the phrase or a word follows it that
# cannot go on 前 (not 前往, 前台, 前面: 昨天前往北京 is yesterday).
OPEN_AFTER = LazyPattern(
    r"以后|之后|之前|以前"
    r"|前(?=$|[\s，,。.！!？?；;、…]|[要得必需应该会能就都还先把将我你他她它们的了交做完写发])"
)
WINTER_AFTER = LazyPattern(r"的?冬(?:天|季)")  # 去年冬天: December and the next year's January
# 大概上周二, 上周二左右, 5月3日前后: a day give or take one (``core._around``), as "around
# last Tuesday" is; 大约三天前, 三天前左右: a count made approximate, no window.
AROUND_BEFORE = LazyPattern(r"(?:大约|大概|约莫|差不多)$")
AROUND_AFTER = LazyPattern(r"左右|前后")
# 3、4天前, 两三天前: approximate, no window; only before an expression that starts with a
# number.
APPROX_NUMBER_BEFORE = LazyPattern(r"[0-9一二三四五六七八九十两][、或到~-]?$")
NUMERALS = frozenset("0123456789一二三四五六七八九十两")

REL = LazyPattern(rf"(?P<rel>{alt(w for w in (*REL_DAY, *REL_TOD) if not w.isascii())}){TOD_ZH}")
AGO = LazyPattern(
    rf"(?<![0-9{CN}百千万几])(?P<n>{NUM_ZH})(?P<u>天|日|个?(?:周|星期|礼拜)|个月|年)(?:之|以)?前"
)
# 上周, 上上个星期, 这周三, 上周末, 上周一到周三 (but not 这周围, 本周期)
_WD_SPAN = (
    rf"(?P<wd>[一二三四五六日天]){_WD_TAIL}"
    r"(?:[到至~-](?:周|星期|礼拜)?(?P<wd2>[一二三四五六日天])"
    rf"{_WD_TAIL})?"  # 上周一到三天前: from last Monday to three days ago, not Monday–Wednesday
)
# 上周的周三, 上个星期的星期三, 上周周末 name the day inside that week too.
WEEK = LazyPattern(
    r"(?P<w>上上|下下|上|下|本|这)个?(?:周|星期|礼拜)(?![期刊报围边岁全密转旋详])"
    rf"(?:(?:的?周)?(?P<end>末)|(?:的?(?:周|星期|礼拜))?{_WD_SPAN}{TOD_ZH})?"
)
WEEKDAY = LazyPattern(rf"(?:周|星期|礼拜){_WD_SPAN}{TOD_ZH}")
# 上个月, 这个月, 上个月15号 (but not 这个月饼); 去年, 前年 (but not 去年轻化)
# 6月初, 上个月底, 去年底, 2025年12月中旬: a part of a month or year is read as the whole of it
# (as "early October" is), and belongs to its span, so "从6月初到昨天" is a range and
# "6月底以来" runs to today. Not 初一 (a lunar day).
_PART = r"(?:初(?![一二三四五六七八九十])|底|末|上旬|中旬|下旬)"
MONTH = LazyPattern(
    r"(?P<w>上上|上|这|本|下)个?(?P<u>月)(?![饼亮光球季嫂票台牙子历色])"
    rf"(?:(?P<d>{DAY_ZH})[号日](?![0-9])|{_PART})?"
)
# A month written alone: 1-12, 一-十二. Not 两月 (two months) nor 5月3 (a day without 日).
_MONTH = r"(?P<m>1[0-2]|0?[1-9]|十[一二]?|[一二三四五六七八九])"
_MONTH_END = rf"月份?(?:{_PART}|(?![0-9{CN}日号饼亮光球季嫂票台牙子历色]))"
# 去年, 前年 (but not 去年轻化); 去年10月, 今年五月份, 去年5月3日
YEAR_REL = LazyPattern(
    r"(?P<w>大前|前|去|今|明)(?P<u>年)(?![轻纪代龄级华头])"
    rf"(?:{_PART}|的?{_MONTH}(?:{_MONTH_END}|月(?P<d>{DAY_ZH})[日号](?![楼线])))?"
)
# 十月, 10月, 10月份: the most recent such month (not 23年5月, a two-digit year)
MONTH_ALONE = LazyPattern(rf"(?<![0-9年{CN}个第每]){_MONTH}{_MONTH_END}")
# 过去三天, 最近7天, 近一周, 过去两个星期, 最近一个月, 过去一年里, 这三天: rolling, to today.
ROLLING = LazyPattern(
    rf"(?:过去|最近|(?<![将接附临靠逼贴亲])近)(?:的|这)?(?P<n>{NUM_ZH})"
    r"(?P<u>天|日|个?(?:周|星期|礼拜)|个月|年)(?:来|里|内|以来|之内|当中|中)?"
    rf"|这(?P<n3>{NUM_ZH})(?P<u3>天)(?:来|里|内|以来|当中|中)?"
)
# 2023年, 2023年5月, 2023年5月3日 (but not 2000年前, "2000 years ago")
YMD = LazyPattern(
    rf"(?<![0-9]){YEAR}年(?:(?P<m>{DAY_ZH})月(?![0-9])"
    rf"(?:(?P<d>{DAY_ZH})[日号](?![楼线]){TOD_ZH}|{_PART})?|{_PART}|(?![前后内里来间代以之]))"
)
# 10号那天, 我10号去看牙医了: a day of this month or the last, said with no month. 号 also
# numbers lines, buildings, players, shirts and batteries (10号线, 3号楼, 1号选手, 5号球衣,
# 5号电池), so the day counts only between words that leave it a time: the start, a
# punctuation mark or a subject (我, 他们) before it, and after it a time of day, 那天,
# 的时候, punctuation, the end, or a verb of something done (去, 吃, 做了, 发生…). After 在
# or 于 only 那天, 的时候 or a time of day will do: "我们在3号" may be a place. Anything
# else opens no window. Such days joined (10号到15号, 从10号到15号, 10号、11号和12号: d, d2)
# stand between the same words; 从 before them is the range's.
_DAY_NO = r"(?P<d>[0-9]{1,2}|[一二三]?十[一二三四五六七八九]?|[一二三四五六七八九])"
_TOD_ZH_WORDS = alt([w for w in TOD if not w.isascii()])
_AT_DAY = rf"{plain(_DAY_NO)}号(?:[这那当]一?天|的时候|的?(?:{_TOD_ZH_WORDS}))"
_JOINS = "到至~～\\-–—和与跟或、"
_DAY_TO = rf"\s?(?P<jn>[{_JOINS}])\s?"
# Not inside a chain (the 11号 of 10号到 11号): a long chain tried from each of its days
# would be read in quadratic time.
_NOT_IN_CHAIN = rf"(?<!号[{_JOINS}])(?<!号\s[{_JOINS}])(?<!号[{_JOINS}]\s)(?<!号\s[{_JOINS}]\s)"
_DAY_AFTER = (
    rf"(?:的?(?P<tod>{_TOD_ZH_WORDS})"
    r"|(?=$|[\s，,。.！!？?；;、…]|[这那当]一?天|的时候|那会|的日记|左右"
    r"|我|你|他|她|去|回来|回家|回去|来了|到了|吃|喝|做了|干了|做什么|干什么|干嘛|见了|买了"
    r"|发生))"
)
DAY_ALONE = LazyPattern(
    rf"{_NOT_IN_CHAIN}(?:^|(?<=[\s，,。.！!？?；;、：:我你他她们])|(?<=[在于])(?={_AT_DAY})"
    rf"|从(?={plain(_DAY_NO)}号{plain(_DAY_TO)}))"
    rf"{_DAY_NO}号(?:{_DAY_TO}(?P<d2>{plain(_DAY_NO)})号)*"  # d2: the last (``DAY_NUMBERS``)
    rf"{_DAY_AFTER}"
)
# 从上个月20号到10号, 从昨天到25号: a bare day as the second end of a range (``core._span_to``).
DAY_AFTER_TO = LazyPattern(rf"{_DAY_NO}号{_DAY_AFTER}")
DAY_NUMBERS = LazyPattern(rf"({plain(_DAY_NO)})号")  # every day of a DAY_ALONE match
DAYS_JOINED = frozenset("和与跟或、")  # joined, not a range: at most a week apart
MD = LazyPattern(rf"(?<![0-9年{CN}])(?P<atom>{plain(ZH_MD)}){TOD_ZH}")
ISO_DATE = LazyPattern(rf"(?P<atom>{plain(ISO)})")

FILLER = LazyPattern(alt(
    "发生了什么事情 发生了什么 发生什么 发生了啥 都做了什么 都干了什么 做了什么 干了什么 做了啥 "
    "干了啥 干嘛了 干嘛 做什么 干什么 有什么事 有什么 有啥 怎么样 怎么了 过得 的事情 的事 事情 "
    "什么事 啥事 日记 记录 记了什么 写了什么 回顾 总结 看看 查看 显示 列出 告诉我 一下 我们 什么 "
    "聊了些什么 聊了什么 聊过什么 聊了 聊过 聊天 聊 谈了 谈过 谈 讨论了 讨论 说了 说过 "
    "话题 内容 咱们 "
    "啥 哪些 情况 我 了 的 呢 吗 啊 吧 都 在 是 有 么 嘛 呀 哦 做 干".split()
))  # fmt: skip
