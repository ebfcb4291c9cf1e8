import CSystemd

#if canImport(Glibc)
import Glibc
#endif

/// One journal entry's fields as `sd_journal_sendv` takes them: each `NAME=value` laid end to end in one
/// buffer, and where each ends. The journal's writer keeps one from entry to entry (no allocation once it is
/// large enough) and the sender's fields are written straight into it: a name is a literal, a number is
/// written as decimal digits in place, a string's UTF-8 is copied once — no `String` or array is made per
/// field (building `[JournalField]` first and copying it cost ~10,000 instructions an entry, callgrind).
public struct JournalEntryFields: ~Copyable {
    private var bytes: UnsafeMutablePointer<UInt8>
    /// Room for bytes.
    private(set) var byteCapacity: Int
    /// Bytes written.
    private(set) var byteCount = 0
    private var ends: UnsafeMutablePointer<Int>
    private var endCapacity: Int
    /// Fields written.
    public private(set) var count = 0

    static let initialBytes = 1024
    static let initialFields = 32

    init() {
        byteCapacity = Self.initialBytes
        bytes = .allocate(capacity: byteCapacity)
        endCapacity = Self.initialFields
        ends = .allocate(capacity: endCapacity)
    }

    deinit {
        bytes.deallocate()
        ends.deallocate()
    }

    /// Empties it, keeping its room unless an entry far larger than the rest grew it past `keep` bytes.
    mutating func removeAll(keepingAtMost keep: Int = 1 << 16) {
        byteCount = 0
        count = 0
        if byteCapacity > keep {
            bytes.deallocate()
            byteCapacity = Self.initialBytes
            bytes = .allocate(capacity: byteCapacity)
        }
    }

    // MARK: Writing

    /// `NAME=value`; nothing when `value` is nil. `name` must be a name journald accepts (checked in debug
    /// builds: ``JournalField/isValidName(_:)``).
    public mutating func add(_ name: StaticString, _ value: String?) {
        guard let value else { return }
        beginField(name)
        var text = value
        text.withUTF8 { append($0) }
        endField()
    }

    /// `NAME=` and the number in decimal; nothing when `value` is nil.
    public mutating func add<Number: FixedWidthInteger>(_ name: StaticString, _ value: Number?) {
        guard let value else { return }
        beginField(name)
        appendDecimal(value)
        endField()
    }

    /// A field whose name was checked when it was made.
    public mutating func add(_ field: JournalField) {
        var name = field.name, value = field.value
        reserve(name.utf8.count + 1 + value.utf8.count)
        name.withUTF8 { append($0) }
        appendByte(UInt8(ascii: "="))
        value.withUTF8 { append($0) }
        endField()
    }

    @inline(__always)
    private mutating func beginField(_ name: StaticString) {
        assert(JournalField.isValidName(name.description), "invalid journal field name \(name)")
        let buffer = UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount)
        reserve(buffer.count + 1)
        append(buffer)
        appendByte(UInt8(ascii: "="))
    }

    @inline(__always)
    private mutating func endField() {
        if count == endCapacity {
            let grown = UnsafeMutablePointer<Int>.allocate(capacity: endCapacity * 2)
            grown.update(from: ends, count: count)
            ends.deallocate()
            ends = grown
            endCapacity *= 2
        }
        ends[count] = byteCount
        count += 1
    }

    @inline(__always)
    private mutating func reserve(_ more: Int) {
        if byteCount + more > byteCapacity { grow(more) }
    }

    private mutating func grow(_ more: Int) {
        let capacity = max(byteCapacity * 2, byteCount + more)
        let grown = UnsafeMutablePointer<UInt8>.allocate(capacity: capacity)
        grown.update(from: bytes, count: byteCount)
        bytes.deallocate()
        bytes = grown
        byteCapacity = capacity
    }

    @inline(__always)
    private mutating func append(_ source: UnsafeBufferPointer<UInt8>) {
        guard let base = source.baseAddress, !source.isEmpty else { return }
        reserve(source.count)
        (bytes + byteCount).update(from: base, count: source.count)
        byteCount += source.count
    }

    @inline(__always)
    private mutating func appendByte(_ byte: UInt8) {
        reserve(1)
        bytes[byteCount] = byte
        byteCount += 1
    }

    private mutating func appendDecimal<Number: FixedWidthInteger>(_ value: Number) {
        var magnitude = UInt64(value.magnitude)  // the daemon's numbers are 64 bits at most
        if value < 0 { appendByte(UInt8(ascii: "-")) }
        var digits = 1
        var rest = magnitude / 10
        while rest > 0 {
            digits += 1
            rest /= 10
        }
        reserve(digits)
        var at = byteCount + digits
        repeat {
            at -= 1
            bytes[at] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: magnitude % 10)
            magnitude /= 10
        } while magnitude > 0
        byteCount += digits
    }

    // MARK: Reading

    /// Field `index`'s `NAME=value` bytes.
    func withField<Result>(_ index: Int, _ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        let start = index == 0 ? 0 : ends[index - 1]
        return body(UnsafeBufferPointer(start: bytes + start, count: ends[index] - start))
    }

    /// Field `index` as name and value (split at its first `=`).
    func field(_ index: Int) -> (name: String, value: String) {
        withField(index) { raw in
            let equals = raw.firstIndex(of: UInt8(ascii: "=")) ?? raw.count
            let name = String(decoding: UnsafeBufferPointer(rebasing: raw[..<equals]), as: UTF8.self)
            let value = equals < raw.count ? String(decoding: UnsafeBufferPointer(rebasing: raw[(equals + 1)...]), as: UTF8.self) : ""
            return (name, value)
        }
    }

    /// Every field as name and value, in order (tests, the stderr fallback).
    var fields: [(name: String, value: String)] { (0..<count).map { field($0) } }

    /// Hands the fields to journald; `sd_journal_sendv`'s result (negative: an errno).
    func send() -> Int32 {
        withUnsafeTemporaryAllocation(of: iovec.self, capacity: count) { iov -> Int32 in
            var start = 0
            for i in 0..<count {
                iov[i] = iovec(iov_base: UnsafeMutableRawPointer(bytes + start), iov_len: ends[i] - start)
                start = ends[i]
            }
            return sd_journal_sendv(iov.baseAddress, Int32(count))
        }
    }
}

/// The writer's own: never shared between threads.
@available(*, unavailable)
extension JournalEntryFields: Sendable {}
