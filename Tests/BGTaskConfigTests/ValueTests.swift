import BGTaskConfig
import Testing

@Suite("Values")
struct ValueTests {
    static let second: Int64 = 1_000_000
    static let minute: Int64 = 60 * second

    @Test("time spans", arguments: [
        ("5", 5 * second),
        ("0", 0),
        ("5s", 5 * second),
        ("500ms", 500_000),
        ("500 ms", 500_000),
        ("1min 30s", 90 * second),
        ("1min30s", 90 * second),
        ("2h", 2 * 60 * minute),
        ("1.5s", 1_500_000),
        (".5s", 500_000),
        ("1.5", 1_500_000),
        ("0.25min", 15 * second),
        ("1h 1min 1s 1ms 1us", 3_661_001_001),
        ("10us", 10),
        ("10usec", 10),
        ("10µs", 10),
        ("10μs", 10),
        ("3ms", 3_000),
        ("3msec", 3_000),
        ("3sec", 3 * second),
        ("1second", second),
        ("2seconds", 2 * second),
        ("2m", 2 * minute),
        ("2min", 2 * minute),
        ("1minute", minute),
        ("3minutes", 3 * minute),
        ("1hr", 60 * minute),
        ("1hour", 60 * minute),
        ("2hours", 120 * minute),
        ("1d", 86_400 * second),
        ("2day", 2 * 86_400 * second),
        ("2days", 2 * 86_400 * second),
        ("1w", 7 * 86_400 * second),
        ("1M", 2_629_800 * second),
        ("1y", 31_557_600 * second),
        ("  5min  ", 5 * minute),
        ("infinity", Int64.max),
    ] as [(String, Int64)])
    func timeSpan(text: String, usec: Int64) {
        #expect(SystemdTimeSpan.parse(text) == usec)
    }

    @Test("invalid time spans", arguments: [
        "", " ", "5 parsecs", "5x", "-5s", "s", "1.2.3", "5s x", "infinite", "1 infinity",
        "99999999999999999999", "9999999999999y", "5 S", "1..5s", ".s",
    ])
    func invalidTimeSpan(text: String) {
        #expect(SystemdTimeSpan.parse(text) == nil)
    }

    @Test("time spans format and parse back", arguments: [
        Int64(0), 1, 999, 1_000, 500_000, 1_500_000, 5_000_000, 90_000_000, 300_000_000, 900_000_000,
        3_600_000_000, 3_661_001_001, 86_400_000_000, 604_800_000_000, 31_557_600_000_000, Int64.max,
    ])
    func timeSpanRoundTrip(usec: Int64) {
        #expect(SystemdTimeSpan.parse(SystemdTimeSpan.format(usec)) == usec)
    }

    @Test func timeSpanFormat() {
        #expect(SystemdTimeSpan.format(5_000_000) == "5s")
        #expect(SystemdTimeSpan.format(90_000_000) == "1min 30s")
        #expect(SystemdTimeSpan.format(500_000) == "500ms")
        #expect(SystemdTimeSpan.format(1_500_000) == "1.5s")
        #expect(SystemdTimeSpan.format(300_000_000) == "5min")
        #expect(SystemdTimeSpan.format(Int64.max) == "infinity")
    }

    @Test("booleans", arguments: [
        ("1", true), ("yes", true), ("YES", true), ("y", true), ("true", true), ("True", true), ("t", true),
        ("on", true), ("On", true),
        ("0", false), ("no", false), ("No", false), ("n", false), ("false", false), ("FALSE", false),
        ("f", false), ("off", false), ("OFF", false),
    ])
    func boolean(text: String, value: Bool) {
        #expect(ConfigBoolean.parse(text) == value)
    }

    @Test("invalid booleans", arguments: ["", "2", "maybe", "yess", "enabled", "o"])
    func invalidBoolean(text: String) {
        #expect(ConfigBoolean.parse(text) == nil)
    }

    @Test("byte sizes", arguments: [
        ("64K", Int64(65_536)), ("64KiB", 65_536), ("1M", 1_048_576), ("1MiB", 1_048_576), ("2G", 2_147_483_648),
        ("512", 512), ("512B", 512), ("1.5K", 1_536), ("0.5M", 524_288), ("1T", 1_099_511_627_776),
        (" 64 K ", 65_536),
    ])
    func size(text: String, bytes: Int64) {
        #expect(ByteSize.parse(text) == bytes)
    }

    @Test("invalid byte sizes", arguments: ["", "K", "64Q", "-1K", "1.2.3K", "64kb", "64 KB", "99999999999E"])
    func invalidSize(text: String) {
        #expect(ByteSize.parse(text) == nil)
    }

    @Test func sizeFormat() {
        #expect(ByteSize.format(65_536) == "64KiB")
        #expect(ByteSize.format(1_048_576) == "1MiB")
        #expect(ByteSize.format(1_000) == "1000")
        #expect(ByteSize.parse(ByteSize.format(1_536)) == 1_536)
    }

    @Test("percentages", arguments: [
        ("10%", 1_000), ("0%", 0), ("100%", 10_000), ("12.5%", 1_250), ("12.75%", 1_275), ("0.01%", 1),
    ])
    func percentage(text: String, basisPoints: Int) {
        #expect(Percentage.parse(text)?.basisPoints == basisPoints)
        #expect(Percentage.parse(text).map { Percentage.parse($0.description) } == Percentage.parse(text))
    }

    @Test("invalid percentages", arguments: ["10", "101%", "-1%", "%", "1.234%", "ten%", "10 %x", "1000%"])
    func invalidPercentage(text: String) {
        #expect(Percentage.parse(text) == nil)
    }

    @Test func percentageFraction() {
        #expect(Percentage(10).fraction == 0.1)
        #expect(Percentage(10).description == "10%")
        #expect(Percentage(basisPoints: 1_205).description == "12.05%")
    }

    @Test("accounts", arguments: [
        ("root", Account.name("root")), ("0", .id(0)), ("1000", .id(1000)), ("_apt", .name("_apt")),
        ("systemd-network", .name("systemd-network")), ("host$", .name("host$")),
    ])
    func account(text: String, account: Account) {
        #expect(Account.parse(text) == account)
    }

    @Test("invalid accounts", arguments: ["", "-root", "1abc", "a b", "65535", "4294967295", "99999999999", "röot"])
    func invalidAccount(text: String) {
        #expect(Account.parse(text) == nil)
    }
}
