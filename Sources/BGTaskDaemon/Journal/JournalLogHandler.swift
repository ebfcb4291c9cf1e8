public import Logging
import BGTaskCore

/// Bridges swift-log to the journal sink, so ordinary logs and decisions land in the same place.
/// Metadata whose key is a valid journal field name (e.g. `BGTASKD_APP`) becomes a field; the rest is
/// appended to the message.
public struct JournalLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level = .info
    let sink: JournalSink

    public init(sink: JournalSink) { self.sink = sink }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let extra = event.metadata { merged.merge(extra) { $1 } }
        var fields: [JournalField] = []
        var loose: [String] = []
        for (k, v) in merged.sorted(by: { $0.key < $1.key }) {
            if let f = JournalField(k, "\(v)") { fields.append(f) } else { loose.append("\(k)=\(v)") }
        }
        let text = loose.isEmpty ? "\(event.message)" : "\(event.message) (\(loose.joined(separator: ", ")))"
        // A decision logged through here (e.g. a restart's `terminate`) is as essential as the core's.
        let essential = fields.first { $0.name == "BGTASKD_DECISION" }
            .flatMap { DecisionKind(rawValue: $0.value) }.map(JournalBudget.isAlwaysJournaled) ?? false
        sink.send(text, priority: Self.priority(event.level), fields: fields, essential: essential, file: event.file,
                  line: Int(event.line), function: event.function)
    }

    static func priority(_ level: Logger.Level) -> JournalPriority {
        switch level {
        case .trace, .debug: return .debug
        case .info: return .info
        case .notice: return .notice
        case .warning: return .warning
        case .error, .critical: return .error
        }
    }
}
