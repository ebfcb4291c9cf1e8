/// What the core starts from: the configuration of the daemon's first load (SPEC §17). A recording that
/// begins at the daemon's start has the core built from it as its checkpoint.
public struct RecordingStart: Hashable, Sendable, Codable {
    /// The lifecycle machine's configuration.
    public var lifecycle: LifecycleConfig
    /// The journal budget's limits.
    public var journal: JournalBudget.Limits
    /// The denial budget's limits.
    public var denial: DenialBudget.Limits
    /// The refresh machine's configuration (absent: the defaults, with no app).
    public var refresh: RefreshConfig?

    /// A start.
    public init(
        lifecycle: LifecycleConfig, journal: JournalBudget.Limits, denial: DenialBudget.Limits, refresh: RefreshConfig? = nil
    ) {
        self.lifecycle = lifecycle
        self.journal = journal
        self.denial = denial
        self.refresh = refresh
    }

    /// A core in this start's state.
    public func makeCore() -> DaemonCore {
        DaemonCore(lifecycle: lifecycle, journal: journal, denial: denial, refresh: refresh ?? RefreshConfig())
    }
}

/// One input the core took, with its times and what the core decided (its actions, as text).
public struct RecordedInput: Hashable, Sendable, Codable {
    /// The monotonic instant it was fed at (µs).
    public var monotonicUSec: Int64
    /// The wall clock then (µs since the epoch): the refresh machine's dates are on it.
    public var realtimeUSec: Int64
    /// The input.
    public var input: CoreInput
    /// The actions the core returned for it, in order (``DaemonCore/describe(_:)``).
    public var decisions: [String]

    /// A recorded input.
    public init(monotonicUSec: Int64, realtimeUSec: Int64, input: CoreInput, decisions: [String]) {
        self.monotonicUSec = monotonicUSec
        self.realtimeUSec = realtimeUSec
        self.input = input
        self.decisions = decisions
    }
}

/// A recording (SPEC §17; `bgtaskctl record` writes it as one JSON document): the core's state just before
/// the first input kept (a checkpoint), then the inputs the core took since, in order. The recorder is a ring
/// that keeps the most recent inputs: when it lets the older ones go, it keeps a copy of the core as it was
/// after them, so the recording starts from that state. Versioned: a reader refuses a `version` it does not
/// know (version 1 began at the daemon's start, with its configuration, and had no checkpoint).
public struct CoreRecording: Sendable, Codable {
    /// The format's name.
    public static let formatName = "bgtaskd-recording"
    /// The version this build writes and reads.
    public static let currentVersion = 2

    /// ``formatName``.
    public var format: String
    /// ``currentVersion`` when written.
    public var version: Int
    /// How many inputs the core took before ``checkpoint`` (not in the recording): 0 when the recording
    /// begins at the daemon's start.
    public var inputsBefore: Int
    /// The core's state before the first input kept: the state it started in (with the configuration of
    /// its first load) or a checkpoint taken later. Replay starts from it.
    public var checkpoint: DaemonCore
    /// The inputs, in the order the core took them.
    public var inputs: [RecordedInput]

    /// A recording.
    public init(checkpoint: DaemonCore, inputsBefore: Int, inputs: [RecordedInput]) {
        format = Self.formatName
        version = Self.currentVersion
        self.inputsBefore = inputsBefore
        self.checkpoint = checkpoint
        self.inputs = inputs
    }

    /// A recording that begins at `start`.
    public init(start: RecordingStart, inputs: [RecordedInput]) {
        self.init(checkpoint: start.makeCore(), inputsBefore: 0, inputs: inputs)
    }
}

extension DaemonCore {
    /// An action as the recording keeps it: its full value as text (deterministic: the actions hold no
    /// sets or dictionaries).
    public static func describe(_ action: CoreAction) -> String {
        String(describing: action)
    }
}

/// The first input whose decisions differ between a recording and its replay.
public struct ReplayDifference: Hashable, Sendable {
    /// Its index in the recording (0-based).
    public var index: Int
    /// The input.
    public var input: RecordedInput
    /// The decisions the recording has for it.
    public var expected: [String]
    /// The decisions the core takes now.
    public var got: [String]
}

/// Replays a recording through the core of its checkpoint (no clock: each input at its recorded instants).
public enum CoreReplay: Sendable {
    /// The decisions of every input in order, and the first difference (nil: all equal).
    public static func run(_ recording: CoreRecording) -> (decisions: [[String]], difference: ReplayDifference?) {
        var core = recording.checkpoint
        var all: [[String]] = []
        all.reserveCapacity(recording.inputs.count)
        var first: ReplayDifference?
        for (index, recorded) in recording.inputs.enumerated() {
            let actions = core.handle(
                recorded.input, now: Instant(microseconds: recorded.monotonicUSec),
                wall: RealtimeInstant(microsecondsSinceEpoch: recorded.realtimeUSec))
            let got = actions.map(DaemonCore.describe)
            if first == nil, got != recorded.decisions {
                first = ReplayDifference(index: index, input: recorded, expected: recorded.decisions, got: got)
            }
            all.append(got)
        }
        return (all, first)
    }
}
