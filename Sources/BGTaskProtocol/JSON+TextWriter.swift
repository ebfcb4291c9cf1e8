/// Compact JSON text written member by member into one byte array, with no ``JSON`` tree in between: the
/// same bytes as ``JSON/write(into:)`` of the tree when the caller writes each object's keys in sorted
/// order, as that writes them. For the daemon's state files, written a few times a second with an entry per
/// app: building their tree cost a dictionary and a few boxes per app, allocated and freed on the writer's
/// thread, and with one malloc arena (the daemon's `M_ARENA_MAX=1`) every such allocation contends for the
/// arena's lock with the daemon's queue (docs/performance.md, "State writes and the queue's deadlines").
///
/// Separators are the writer's: ``key(_:)`` and ``element()`` put a comma before every member but the
/// first of its container; the value writers put none.
public struct JSONTextWriter: Sendable {
    public var bytes: [UInt8]
    /// Nothing written yet in the innermost open container.
    private var first = true

    public init(capacity: Int = 0) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    private mutating func separator() {
        if !first { bytes.append(UInt8(ascii: ",")) }
        first = false
    }

    /// The next member of an object: its key (the caller keeps the keys of one object sorted).
    public mutating func key(_ key: String) {
        separator()
        JSON.writeString(key, into: &bytes)
        bytes.append(UInt8(ascii: ":"))
    }

    /// The next element of an array.
    public mutating func element() { separator() }

    public mutating func beginObject() { open(UInt8(ascii: "{")) }
    public mutating func endObject() { close(UInt8(ascii: "}")) }
    public mutating func beginArray() { open(UInt8(ascii: "[")) }
    public mutating func endArray() { close(UInt8(ascii: "]")) }

    /// A container opened: its first member takes no comma.
    private mutating func open(_ bracket: UInt8) {
        bytes.append(bracket)
        first = true
    }

    /// A container closed: it is a member of the one around it, so the next member there takes a comma.
    private mutating func close(_ bracket: UInt8) {
        bytes.append(bracket)
        first = false
    }

    public mutating func int(_ value: Int64) { JSON.writeInt(value, into: &bytes) }

    public mutating func bool(_ value: Bool) { JSON.bool(value).write(into: &bytes) }

    public mutating func string(_ value: String) { JSON.writeString(value, into: &bytes) }
}
