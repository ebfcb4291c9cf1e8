import BGTaskConfig
import BGTaskCore
import BGTaskProtocol
import Dispatch

#if canImport(Glibc)
import Glibc
#endif

/// SPEC §16: the energy accounts as a JSON object (keys sorted when written: equal accounts, equal bytes).
enum EnergyJSON {
    static let formatVersion: Int64 = 1

    static func figures(from json: JSON?) -> EnergyFigures? {
        guard let o = json?.objectValue, let cpu = o["backgroundCPUUSec"]?.intValue, cpu >= 0 else { return nil }
        var f = EnergyFigures(backgroundCPUUSec: cpu)
        for (raw, n) in o["wakes"]?.objectValue ?? [:] {
            if let cause = WakeCause(rawValue: raw), let n = n.intValue, n >= 0 { f.wakes[cause] = n }
        }
        return f
    }

    /// The file's bytes: its JSON and a newline. Written member by member in sorted key order (the bytes
    /// the JSON tree of the accounts would write), with no tree: see ``JSONTextWriter``.
    static func bytes(of accounts: [AppID: EnergyAccount]) -> [UInt8] {
        var w = JSONTextWriter(capacity: 64 + 160 * accounts.count)
        var hours: [(hour: Int64, figures: EnergyFigures)] = []
        w.beginObject()
        w.key("apps")
        w.beginObject()
        for app in accounts.keys.sorted() {
            guard let account = accounts[app] else { continue }
            w.key(app.rawValue)
            w.beginObject()
            w.key("hours")
            w.beginObject()
            hours.removeAll(keepingCapacity: true)
            account.forEachHour { hours.append(($0, $1)) }
            sortAsKeys(&hours)
            for (hour, figures) in hours {
                w.key(String(hour))
                write(figures, into: &w)
            }
            w.endObject()
            w.key("total")
            write(account.total, into: &w)
            w.endObject()
        }
        w.endObject()
        w.key("version")
        w.int(formatVersion)
        w.endObject()
        w.bytes.append(UInt8(ascii: "\n"))
        return w.bytes
    }

    /// The wake causes in the order of their keys.
    static let causesByKey = WakeCause.allCases.sorted { $0.rawValue < $1.rawValue }

    static func write(_ f: EnergyFigures, into w: inout JSONTextWriter) {
        w.beginObject()
        w.key("backgroundCPUUSec")
        w.int(f.backgroundCPUUSec)
        w.key("wakes")
        w.beginObject()
        for cause in causesByKey {
            let n = f.wakeCount(cause)
            if n != 0 {
                w.key(cause.rawValue)
                w.int(n)
            }
        }
        w.endObject()
        w.endObject()
    }

    /// Hours in the order of their keys' text ("10" before "9"), as an object's keys are written. Kept
    /// oldest first, they are already in that order when all have as many digits (every hour since 1970
    /// until the year 2084 has six): then nothing is sorted.
    static func sortAsKeys(_ hours: inout [(hour: Int64, figures: EnergyFigures)]) {
        guard hours.count > 1 else { return }
        let digits = { (h: Int64) in h < 0 ? -1 : String(h).utf8.count }
        let d0 = digits(hours[0].hour)
        if hours.allSatisfy({ digits($0.hour) == d0 }) && d0 > 0 { return }
        hours.sort { String($0.hour) < String($1.hour) }
    }

    /// Entries that make no sense are skipped and reported; `nil` only for a file that is not an object.
    static func decode(_ json: JSON) -> (accounts: [AppID: EnergyAccount], warnings: [String])? {
        guard let root = json.objectValue else { return nil }
        var accounts: [AppID: EnergyAccount] = [:]
        var warnings: [String] = []
        for (raw, value) in (root["apps"]?.objectValue ?? [:]).sorted(by: { $0.key < $1.key }) {
            guard let app = AppID(raw), let total = figures(from: value["total"]) else {
                warnings.append("skipped the energy entry of \(raw.debugDescription)")
                continue
            }
            var account = EnergyAccount(total: total)
            for (h, f) in value["hours"]?.objectValue ?? [:] {
                if let hour = Int64(h), let f = figures(from: f) { account.hours[hour] = f }
            }
            accounts[app] = account
        }
        return (accounts, warnings)
    }
}

/// Keeps the energy accounts in `energy.json` in the state directory, written as ``StateStore`` writes
/// (temporary file, fsync, rename, fsync of the directory: a `kill -9` leaves the old file or the new one)
/// on a private queue, so that no fsync stalls the daemon's queue. A save starts its write `saveWindow`
/// later (a ``QuietTimer``: the save itself wakes no thread, so a resume's save does not compete with the
/// resumed app for a CPU); saves made meanwhile, or while a write is under way, are written together by
/// the next one. The daemon's exit writes the last accounts at once, after the write under way
/// (``flush(_:)``).
/// A save keeps no copy of the accounts, only where to read them when its window ends; they are encoded
/// on the private queue: holding each save's copy made the ledger's next change copy every app's account,
/// and encoding them on the daemon's queue cost it O(apps) every window (`make bench` row 3). They are
/// written member by member (``EnergyJSON/bytes(of:)``), with no JSON tree to allocate and free beside
/// the daemon's queue (``StateStore``). The window
/// grows with the cost of a write (``window(afterWriteNS:)``): every app's account is in each write, and
/// with 10,000 apps launching a write took ~25 ms, a quarter of a CPU at one every 100 ms.
final class EnergyStore: @unchecked Sendable {
    // @unchecked: the mutable properties are used only on `queue`.
    let directory: String
    let path: String
    let temporaryPath: String
    private let queue: DispatchQueue
    private let ioQueue = DispatchQueue(label: "bgtaskd.energy-writer")
    private var latest: [AppID: EnergyAccount]?
    private var writing = false
    private var saveArmed = false
    /// Where to read the accounts of the last save (until the save window ends).
    private var unsaved: (() -> [AppID: EnergyAccount])?
    private var logFailure: (@Sendable (String) -> Void)?
    private let saveTimer: QuietTimer
    static let saveWindowNS: Int64 = 100_000_000
    static let saveWindow: DispatchTimeInterval = .nanoseconds(Int(saveWindowNS))
    /// The window after a write that took `ns`: `saveWindow`, or `writeShare` times the write's own time if
    /// longer, so that the writer spends at most 1/`writeShare` of the time writing (a write of a few dozen
    /// apps on a quick disk takes well under 5 ms: the window stays 100 ms).
    static func window(afterWriteNS ns: Int64) -> Int64 { max(saveWindowNS, writeShare * ns) }
    static let writeShare: Int64 = 20
    /// The window the next save waits, from the last write's duration.
    private var windowNS = EnergyStore.saveWindowNS
    /// Writes done (for tests).
    private(set) var writes = 0

    static let fileName = "energy.json"

    init(directory: String, queue: DispatchQueue) {
        self.directory = directory
        self.path = directory + "/" + Self.fileName
        self.temporaryPath = directory + "/." + Self.fileName + ".tmp"
        self.queue = queue
        saveTimer = QuietTimer(queue: queue, window: Self.saveWindow)
        saveTimer.start { [weak self] in
            guard let self, self.saveArmed, let read = self.unsaved, let logFailure = self.logFailure else { return }
            self.saveArmed = false
            self.unsaved = nil
            // Read here, off the turn that saved (a resume's), not on it; encoded by the writer.
            self.latest = read()
            self.startWrite(logFailure)
        }
    }

    /// The saved accounts; none on a first start. A file that cannot be read back is moved aside.
    func load() -> (accounts: [AppID: EnergyAccount], warnings: [String]) {
        unlink(temporaryPath)
        guard let bytes = StateStore.readAll(path) else {
            if errno == ENOENT { return ([:], []) }
            return ([:], ["cannot read \(path): \(String(cString: strerror(errno))); energy accounts start empty"])
        }
        if let json = try? JSON.parse(bytes), let decoded = EnergyJSON.decode(json) { return decoded }
        let aside = path + ".corrupt"
        rename(path, aside)
        return ([:], ["\(path) could not be read back; moved it to \(aside); energy accounts start empty"])
    }

    func save(_ accounts: [AppID: EnergyAccount], logFailure: @escaping @Sendable (String) -> Void) {
        save(reading: { accounts }, logFailure: logFailure)
    }

    /// Saves the accounts `read` returns on the queue when the save window ends.
    func save(reading read: @escaping () -> [AppID: EnergyAccount], logFailure: @escaping @Sendable (String) -> Void) {
        dispatchPrecondition(condition: .onQueue(queue))
        unsaved = read
        self.logFailure = logFailure
        if !saveArmed {
            saveArmed = true
            saveTimer.arm(afterNS: windowNS)
        }
    }

    /// The daemon's exit: `accounts` written now, on the writer queue after the write under way (never beside
    /// it: both use one temporary file). Returns an error text, nil on success.
    func flush(_ accounts: [AppID: EnergyAccount]) -> String? {
        let (path, temporaryPath, directory) = (self.path, self.temporaryPath, self.directory)
        return ioQueue.sync {
            StateStore.writeAtomically(EnergyJSON.bytes(of: accounts), path: path, temporaryPath: temporaryPath, directory: directory)
        }
    }

    private func startWrite(_ logFailure: @escaping @Sendable (String) -> Void) {
        guard !writing, let accounts = latest else { return }
        latest = nil
        writing = true
        let (path, temporaryPath, directory) = (self.path, self.temporaryPath, self.directory)
        ioQueue.async { [weak self] in
            let started = Monotonic.nowUSec()
            let error = StateStore.writeAtomically(EnergyJSON.bytes(of: accounts), path: path, temporaryPath: temporaryPath, directory: directory)
            if let error { logFailure(error) }
            let took = (Monotonic.nowUSec() - started) * 1000
            guard let self else { return }
            self.queue.async {
                self.writing = false
                self.writes += 1
                self.windowNS = Self.window(afterWriteNS: took)
                self.startWrite(logFailure)
            }
        }
    }
}
