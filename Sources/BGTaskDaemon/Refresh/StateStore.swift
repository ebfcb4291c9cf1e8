import BGTaskConfig
import BGTaskCore
import BGTaskProtocol
import Dispatch

#if canImport(Glibc)
import Glibc
#endif

extension RefreshState {
    static let formatVersion: Int64 = 1

    /// The file's bytes: its JSON (keys sorted, so equal states give equal bytes) and a newline. Written
    /// member by member in key order, with no JSON tree in between (``JSONTextWriter``).
    func bytes() -> [UInt8] {
        var ids: [AppID] = []
        ids.reserveCapacity(appSettings.count + schedule.pending.count + energy.lastUsed.count)
        ids.append(contentsOf: appSettings.keys)
        ids.append(contentsOf: schedule.pending.keys)
        ids.append(contentsOf: schedule.lastRefresh.keys)
        ids.append(contentsOf: energy.closedByUser)
        ids.append(contentsOf: energy.lastUsed.keys)
        ids.append(contentsOf: energy.wakes.keys)
        ids.sort()
        var w = JSONTextWriter(capacity: 128 + 64 * ids.count)
        w.beginObject()
        w.key("apps")
        w.beginObject()
        var previous: AppID?
        for id in ids where id != previous {
            previous = id
            w.key(id.rawValue)
            writeEntry(of: id, into: &w)
        }
        w.endObject()
        if let mode {
            w.key("backgroundAppRefresh")
            w.string(mode.rawValue)
        }
        if onExternalPower != nil || network != nil {
            w.key("conditions")
            w.beginObject()
            if let network {
                w.key("network")
                w.string(network.rawValue)
            }
            if let onExternalPower {
                w.key("onExternalPower")
                w.bool(onExternalPower)
            }
            w.endObject()
        }
        w.key("lowPowerMode")
        w.bool(lowPowerMode)
        w.key("version")
        w.int(Self.formatVersion)
        w.endObject()
        w.bytes.append(UInt8(ascii: "\n"))
        return w.bytes
    }

    /// One app's entry, its keys in order (its energy fields are SPEC §16's, StateStore+Energy.swift).
    private func writeEntry(of id: AppID, into w: inout JSONTextWriter) {
        w.beginObject()
        if energy.closedByUser.contains(id) {
            w.key("closedByUser")
            w.bool(true)
        }
        if let last = schedule.lastRefresh[id] {
            w.key("lastRefreshRealtimeUSec")
            w.int(last.microsecondsSinceEpoch)
        }
        if let used = energy.lastUsed[id] {
            w.key("lastUsedRealtimeUSec")
            w.int(used.microsecondsSinceEpoch)
        }
        if let enabled = appSettings[id] {
            w.key("refresh")
            w.bool(enabled)
        }
        let requests = schedule.requests(for: id)
        if !requests.isEmpty {
            w.key("requests")
            w.beginArray()
            for r in requests {
                w.element()
                Self.write(r, into: &w)
            }
            w.endArray()
        }
        if let wakes = energy.wakes[id], !wakes.isEmpty {
            w.key("wakesRealtimeUSec")
            w.beginArray()
            for t in wakes {
                w.element()
                w.int(t.microsecondsSinceEpoch)
            }
            w.endArray()
        }
        w.endObject()
    }

    /// A request as on the wire (`type TaskRequest`), `earliestBeginUSec` left out when there is none.
    static func write(_ r: TaskRequest, into w: inout JSONTextWriter) {
        w.beginObject()
        if let begin = r.earliestBegin {
            w.key("earliestBeginUSec")
            w.int(begin.microsecondsSinceEpoch)
        }
        w.key("identifier")
        w.string(r.identifier)
        w.key("kind")
        w.string(r.kind.rawValue)
        w.key("requiresExternalPower")
        w.bool(r.requiresExternalPower)
        w.key("requiresNetwork")
        w.bool(r.requiresNetwork)
        w.endObject()
    }

    /// Reads a saved state. Entries that make no sense are skipped and reported; only a file that is not a
    /// JSON object at all fails.
    static func decode(_ json: JSON) -> (state: RefreshState, warnings: [String])? {
        guard let root = json.objectValue else { return nil }
        var state = RefreshState()
        var warnings: [String] = []
        if let v = root["version"]?.intValue, v > formatVersion {
            warnings.append("state format \(v) is newer than \(formatVersion); reading what is understood")
        }
        if let raw = root["backgroundAppRefresh"]?.stringValue {
            if let mode = RefreshMode(rawValue: raw) { state.mode = mode } else { warnings.append("unknown backgroundAppRefresh \(raw)") }
        }
        state.lowPowerMode = root["lowPowerMode"]?.boolValue ?? false
        if let conditions = root["conditions"]?.objectValue {
            state.onExternalPower = conditions["onExternalPower"]?.boolValue
            if let raw = conditions["network"]?.stringValue {
                if let n = NetworkCondition(rawValue: raw) { state.network = n } else { warnings.append("unknown network \(raw)") }
            }
        }
        for (rawID, value) in (root["apps"]?.objectValue ?? [:]).sorted(by: { $0.key < $1.key }) {
            guard let id = AppID(rawID), let entry = value.objectValue else {
                warnings.append("skipped the entry of \(rawID.debugDescription)")
                continue
            }
            if let enabled = entry["refresh"]?.boolValue { state.appSettings[id] = enabled }
            state.readEnergy(of: id, from: entry)
            if let last = entry["lastRefreshRealtimeUSec"]?.intValue {
                state.schedule.setLastRefresh(RealtimeInstant(microsecondsSinceEpoch: last), for: id)
            }
            for item in entry["requests"]?.arrayValue ?? [] {
                guard let request = requestFrom(item) else {
                    warnings.append("skipped a malformed task request of \(id)")
                    continue
                }
                if !state.schedule.restore(request, for: id) {
                    warnings.append("dropped task request \(request.identifier) of \(id): over the limit")
                }
            }
        }
        return (state, warnings)
    }

    static func requestFrom(_ json: JSON) -> TaskRequest? {
        guard let identifier = json["identifier"]?.stringValue, !identifier.isEmpty,
            let kind = json["kind"]?.stringValue.flatMap(TaskKind.init(rawValue:))
        else { return nil }
        return TaskRequest(
            identifier: identifier, kind: kind,
            earliestBegin: json["earliestBeginUSec"]?.intValue.map { RealtimeInstant(microsecondsSinceEpoch: $0) },
            requiresNetwork: json["requiresNetwork"]?.boolValue ?? false,
            requiresExternalPower: json["requiresExternalPower"]?.boolValue ?? false)
    }
}

/// Keeps ``RefreshState`` in one file of the state directory, crash-safe: each save writes a temporary
/// file, fsyncs it, renames it over the old one and fsyncs the directory, so a `kill -9` (or a power cut)
/// at any moment leaves either the old file or the new one, both complete.
///
/// Saves run on a private queue so that fsync never stalls the daemon's queue; a save's completion runs
/// on the daemon's queue once a write that includes it is durable. Saves made while a write is under way
/// are written together by the next one (group commit), so a burst of changes costs two fsyncs, not one each.
/// A save keeps no copy of the state, only where to read it when its write starts (as ``EnergyStore``):
/// holding each save's copy made the core's next change copy the state's tables (an app's last use at
/// each launch: O(apps) per launch, `make bench` row 4's launch). The file's bytes are made on the private
/// queue, once per write: with every app's energy in the file, encoding it at each save cost the
/// daemon's queue O(apps) per state change (`make bench` row 3). They are written member by member
/// (``RefreshState/bytes()``), not through a JSON tree: the tree's allocations on the writer's thread
/// held the process's one malloc arena against the daemon's queue, which made deadlines late. A save no
/// call waits for (`soon: false`: an app's last use, its wakes) starts its write `saveWindow` later (a
/// ``QuietTimer``), so a stream of them is written ten times a second, not back to back; a save a call
/// waits for starts its write at once, and takes the waiting ones with it. The daemon's exit writes what
/// is still waiting (``flush()``).
final class StateStore: @unchecked Sendable {
    // @unchecked: the mutable properties are used only on `queue`; `ioQueue` gets values, never `self`'s state.
    let directory: String
    let path: String
    let temporaryPath: String
    private let queue: DispatchQueue
    private let ioQueue = DispatchQueue(label: "bgtaskd.state-writer")

    private var version: UInt64 = 0
    /// Where to read the state of the saves not written yet (nil: none waits).
    private var latest: (() -> RefreshState?)?
    private var writing = false
    private var waiters: [(version: UInt64, completion: (String?) -> Void)] = []
    /// A save a call waits for is not written yet.
    private var urgent = false
    private var windowArmed = false
    private let windowTimer: QuietTimer
    static let saveWindow: DispatchTimeInterval = .milliseconds(100)
    /// Writes done (for tests and Stats).
    private(set) var writes = 0

    static let fileName = "refresh.json"

    init(directory: String, queue: DispatchQueue) {
        self.directory = directory
        self.path = directory + "/" + Self.fileName
        self.temporaryPath = directory + "/." + Self.fileName + ".tmp"
        self.queue = queue
        windowTimer = QuietTimer(queue: queue, window: Self.saveWindow)
        windowTimer.start { [weak self] in
            guard let self else { return }
            self.windowArmed = false
            self.startWrite()
        }
    }

    /// Reads the saved state; a missing file is a fresh start. A file that cannot be read back (which the
    /// write protocol never leaves behind: someone else wrote it) is renamed `*.corrupt` and reported.
    /// A leftover temporary file (from a crash in the middle of a write) is removed.
    func load() -> (state: RefreshState, warnings: [String]) {
        unlink(temporaryPath)
        guard let bytes = Self.readAll(path) else {
            if errno == ENOENT { return (RefreshState(), []) }
            return (RefreshState(), ["cannot read \(path): \(String(cString: strerror(errno))); starting from the defaults"])
        }
        if let json = try? JSON.parse(bytes), let decoded = RefreshState.decode(json) {
            return decoded
        }
        let aside = path + ".corrupt"
        rename(path, aside)
        return (RefreshState(), ["\(path) could not be read back; moved it to \(aside) and started from the defaults"])
    }

    /// Saves `state`; `completion(nil)` once it is durable, `completion(error)` if the write failed.
    /// `soon: false`: no call waits for it; its write may start up to `saveWindow` later.
    func save(_ state: RefreshState, soon: Bool = true, completion: @escaping (String?) -> Void = { _ in }) {
        save(reading: { state }, soon: soon, completion: completion)
    }

    /// Saves the state `read` returns on the queue when the write starts (the newest then: a write covers
    /// every save made before it). `read` returning nil (its owner is gone) writes nothing.
    func save(reading read: @escaping () -> RefreshState?, soon: Bool = true,
              completion: @escaping (String?) -> Void = { _ in })
    {
        dispatchPrecondition(condition: .onQueue(queue))
        version += 1
        latest = read
        waiters.append((version, completion))
        if soon { urgent = true }
        startOrWait()
    }

    /// Starts the write of what is saved now if a call waits for it, else within the save window.
    private func startOrWait() {
        guard !writing, latest != nil else { return }
        if urgent { return startWrite() }
        if !windowArmed {
            windowArmed = true
            windowTimer.arm()
        }
    }

    /// The daemon's exit: what is saved and not written yet, written now (after the write under way).
    /// Returns an error text, nil on success.
    func flush() -> String? {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let read = latest else { return nil }
        latest = nil
        guard let state = read() else { return nil }
        let (path, temporaryPath, directory) = (self.path, self.temporaryPath, self.directory)
        // On the writer queue: after the write under way, never beside it (one temporary file).
        return ioQueue.sync {
            Self.writeAtomically(state.bytes(), path: path, temporaryPath: temporaryPath, directory: directory)
        }
    }

    private func startWrite() {
        // One write at a time: a completion run by `finished` may already have started the next one.
        guard !writing, let read = latest else { return }
        latest = nil
        guard let state = read() else { return }
        urgent = false
        writing = true
        let target = version
        let (path, temporaryPath, directory) = (self.path, self.temporaryPath, self.directory)
        ioQueue.async { [weak self] in
            let error = Self.writeAtomically(state.bytes(), path: path, temporaryPath: temporaryPath, directory: directory)
            guard let self else { return }
            self.queue.async { self.finished(target, error: error) }
        }
    }

    /// A write of every save up to `target` is durable (or failed): answer those saves, in the order they
    /// were made, then write what was saved meanwhile. Writes are strictly in version order, so the file
    /// never goes back to an older state once a newer one was answered.
    private func finished(_ target: UInt64, error: String?) {
        precondition(target > durableVersion || error != nil, "state writes out of order")
        writing = false
        writes += 1
        if error == nil { durableVersion = target }
        let done = waiters.prefix { $0.version <= target }
        waiters.removeFirst(done.count)
        for w in done { w.completion(error) }
        startOrWait()
    }

    /// The newest version known to be on disk.
    private(set) var durableVersion: UInt64 = 0

    /// Write, fsync, rename, fsync the directory. Returns an error text, nil on success.
    static func writeAtomically(_ bytes: [UInt8], path: String, temporaryPath: String, directory: String) -> String? {
        func failure(_ what: String) -> String { "\(what) \(temporaryPath): \(String(cString: strerror(errno)))" }
        let fd = open(temporaryPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { return failure("cannot create") }
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { raw -> Int in
                guard let base = raw.baseAddress else { return 0 }
                return write(fd, base + offset, raw.count - offset)
            }
            if n <= 0 {
                if n < 0 && errno == EINTR { continue }
                let message = failure("cannot write")
                close(fd)
                unlink(temporaryPath)
                return message
            }
            offset += n
        }
        if fsync(fd) != 0 {
            let message = failure("cannot fsync")
            close(fd)
            unlink(temporaryPath)
            return message
        }
        close(fd)
        if rename(temporaryPath, path) != 0 {
            let message = failure("cannot rename")
            unlink(temporaryPath)
            return message
        }
        let dir = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard dir >= 0 else { return "cannot open \(directory): \(String(cString: strerror(errno)))" }
        defer { close(dir) }
        if fsync(dir) != 0 { return "cannot fsync \(directory): \(String(cString: strerror(errno)))" }
        return nil
    }

    static func readAll(_ path: String) -> [UInt8]? { FileIO.readBytes(path) }
}
