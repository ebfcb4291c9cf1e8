// An `Encodable` value written straight into ``JSON/compact()``'s form, as it encodes: no `JSON` tree in
// between (a core with 100,000 assertions would build one of ~100 MiB to write ~5 MiB). The containers a
// value opens are closed when a container of an outer value writes again, or when the value's `encode(to:)`
// returns; a container written to after that (out of order), or `superEncoder`, is refused with an error
// (`JSON.encode(_:)` then `compact()` takes any order). `JSON(compact: JSON.compactEncode(v))` equals
// `JSON.encode(v)` (`CheckpointCompactTests`).
//
// It encodes a recording's checkpoint, ~110,000 values at 10,000 apps and 100,000 assertions, so the path
// of each value costs what it must and no more: scalars are told apart by their type's metadata pointer
// (no cast), the coding path is one stack of keys in the writer (a container keeps its depth; the path is
// made only when asked for or for an error), and the scalar requirements of the containers are written
// directly.

extension JSON {
    /// `value` encoded (its `Encodable` conformance) in the compact form ``JSON/init(compact:)`` reads.
    public static func compactEncode<T: Encodable>(_ value: T) throws -> [UInt8] {
        let w = StreamWriter()
        w.out.bytes.reserveCapacity(1 << 16)
        w.out.bytes.append(0xB1)
        try w.encodeValue(value, key: nil)
        if let failure = w.failure { throw failure }
        return w.out.bytes
    }
}

private final class StreamWriter {
    /// The writer's state, behind a pointer: a stored property of a class is checked for exclusive access
    /// at run time on every write (`swift_beginAccess`: a quarter of the encoding's instructions, measured
    /// with callgrind), a pointee is not. Only this writer and the containers it made use it, on one thread.
    private struct State {
        var out = CompactWriter()
        /// The open containers, innermost last: their numbers and whether each is an array.
        var open: [(id: Int, array: Bool)] = []
        var nextID = 0
        var failure: JSONCodingError?
        /// The keys of the values being encoded, outermost first: the coding path of the innermost.
        var keys: [any CodingKey] = []
    }

    private let state: UnsafeMutablePointer<State>

    init() {
        state = .allocate(capacity: 1)
        state.initialize(to: State())
    }

    deinit {
        state.deinitialize(count: 1)
        state.deallocate()
    }

    var out: CompactWriter {
        _read { yield state.pointee.out }
        _modify { yield &state.pointee.out }
    }
    var open: [(id: Int, array: Bool)] {
        _read { yield state.pointee.open }
        _modify { yield &state.pointee.open }
    }
    var nextID: Int {
        _read { yield state.pointee.nextID }
        _modify { yield &state.pointee.nextID }
    }
    var failure: JSONCodingError? {
        _read { yield state.pointee.failure }
        _modify { yield &state.pointee.failure }
    }
    var keys: [any CodingKey] {
        _read { yield state.pointee.keys }
        _modify { yield &state.pointee.keys }
    }

    /// The coding path `depth` keys deep, and `key` after it.
    func path(_ depth: Int, _ key: (any CodingKey)? = nil) -> [any CodingKey] {
        Array(keys.prefix(depth)) + (key.map { [$0] } ?? [])
    }

    func fail(_ path: [any CodingKey], _ reason: String) {
        if failure == nil { failure = JSONCodingError(path, reason) }
    }

    /// Opens a container (its tag written) and gives its number.
    func openContainer(array: Bool) -> Int {
        nextID += 1
        out.tag(array ? CompactWriter.arrayTag : CompactWriter.objectTag)
        open.append((nextID, array))
        return nextID
    }

    /// Closes the containers opened after the first `depth`.
    func close(to depth: Int) {
        while open.count > depth { out.close(array: open.removeLast().array) }
    }

    /// Before container `id` (`depth` keys deep) writes (member `key`): the containers opened inside it are
    /// done. False: it is closed already.
    func ready(_ id: Int, depth: Int, _ key: (any CodingKey)? = nil) -> Bool {
        // The innermost open container is the one writing, nearly always: checked first.
        if let last = open.last, last.id == id { return true }
        guard let k = open.lastIndex(where: { $0.id == id }) else {
            fail(path(depth, key), "written to after it was closed")
            return false
        }
        close(to: k + 1)
        return true
    }

    /// `value`, the member `key` of the value being encoded (or an element of it: no key).
    func encodeValue<T: Encodable>(_ value: T, key: (any CodingKey)?) throws {
        if try writeScalar(value, key) { return }
        let depth = open.count, before = out.bytes.count
        if let key { keys.append(key) }
        defer { if key != nil { keys.removeLast() } }
        try value.encode(to: StreamEncoder(writer: self, depth: keys.count))
        // Nothing written: the value is null (as `JSON.encode`'s tree has it).
        if out.bytes.count == before { out.tag(CompactWriter.nullTag) }
        close(to: depth)
    }

    /// `value` written if it is one of the scalars `scalar` (JSON+Codable.swift) reads, as
    /// `CompactWriter.write` writes the JSON scalar `scalar` makes of it (`CheckpointCompactTests` checks
    /// that the two encoders agree). Told apart by comparing `T`'s metadata pointer with each scalar's, no
    /// cast or conformance look-up: a value of another type (every struct, array and enum of the core)
    /// costs a few comparisons where `scalar`'s casts cost a runtime look-up each.
    private func writeScalar<T>(_ value: T, _ key: (any CodingKey)?) throws -> Bool {
        func exactly<S>(_ type: S.Type) -> S { unsafeBitCast(value, to: type) }
        if T.self == String.self { out.stringValue(exactly(String.self)) }
        else if T.self == Int.self { out.int(Int64(exactly(Int.self))) }
        else if T.self == UInt64.self { writeUnsigned(exactly(UInt64.self), key) }
        else if T.self == Int64.self { out.int(exactly(Int64.self)) }
        else if T.self == Int32.self { out.int(Int64(exactly(Int32.self))) }
        else if T.self == UInt32.self { out.int(Int64(exactly(UInt32.self))) }
        else if T.self == Bool.self { out.write(.bool(exactly(Bool.self))) }
        else if T.self == Double.self { out.double(exactly(Double.self)) }
        else if T.self == Float.self { out.double(Double(exactly(Float.self))) }
        else if T.self == Int8.self { out.int(Int64(exactly(Int8.self))) }
        else if T.self == Int16.self { out.int(Int64(exactly(Int16.self))) }
        else if T.self == UInt8.self { out.int(Int64(exactly(UInt8.self))) }
        else if T.self == UInt16.self { out.int(Int64(exactly(UInt16.self))) }
        else if T.self == UInt.self { writeUnsigned(UInt64(exactly(UInt.self)), key) }
        else { return false }
        return true
    }

    /// An unsigned integer as `scalar` reads it: refused past `Int64.max`.
    func writeUnsigned(_ v: UInt64, _ key: (any CodingKey)?) {
        guard let i = Int64(exactly: v) else {
            // Written as null so that the bytes stay well formed; the encoding fails.
            out.tag(CompactWriter.nullTag)
            return fail(path(keys.count, key), "\(v) does not fit a 64-bit signed integer")
        }
        out.int(i)
    }
}

private struct StreamEncoder: Encoder {
    let writer: StreamWriter
    /// How many of the writer's keys are this value's path.
    let depth: Int
    var codingPath: [any CodingKey] { writer.path(depth) }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(StreamKeyed<Key>(writer: writer, id: writer.openContainer(array: false), depth: depth))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        StreamUnkeyed(writer: writer, id: writer.openContainer(array: true), depth: depth)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer { StreamSingle(writer: writer, depth: depth) }
}

// A nested container (`nestedContainer(forKey:)`) writes its members at its parent's depth: its own key is
// not on the writer's stack, so its coding path lacks that one key.
private struct StreamKeyed<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let writer: StreamWriter
    let id: Int
    let depth: Int
    var codingPath: [any CodingKey] { writer.path(depth) }

    /// Ready to write the member `key`: its name written.
    private func member(_ key: Key) -> Bool {
        guard writer.ready(id, depth: depth, key) else { return false }
        writer.out.string(key.stringValue)
        return true
    }

    mutating func encodeNil(forKey key: Key) throws {
        if member(key) { writer.out.tag(CompactWriter.nullTag) }
    }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        if member(key) { try writer.encodeValue(value, key: key) }
    }
    // The scalars' own requirements (what synthesized conformances call): written at once.
    mutating func encode(_ value: String, forKey key: Key) throws {
        if member(key) { writer.out.stringValue(value) }
    }
    mutating func encode(_ value: Bool, forKey key: Key) throws {
        if member(key) { writer.out.write(.bool(value)) }
    }
    mutating func encode(_ value: Int, forKey key: Key) throws {
        if member(key) { writer.out.int(Int64(value)) }
    }
    mutating func encode(_ value: Int32, forKey key: Key) throws {
        if member(key) { writer.out.int(Int64(value)) }
    }
    mutating func encode(_ value: Int64, forKey key: Key) throws {
        if member(key) { writer.out.int(value) }
    }
    mutating func encode(_ value: UInt32, forKey key: Key) throws {
        if member(key) { writer.out.int(Int64(value)) }
    }
    mutating func encode(_ value: UInt64, forKey key: Key) throws {
        if member(key) { writer.writeUnsigned(value, key) }
    }
    mutating func encode(_ value: Double, forKey key: Key) throws {
        if member(key) { writer.out.double(value) }
    }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        _ = member(key)
        return KeyedEncodingContainer(StreamKeyed<NestedKey>(writer: writer, id: writer.openContainer(array: false), depth: depth))
    }
    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        _ = member(key)
        return StreamUnkeyed(writer: writer, id: writer.openContainer(array: true), depth: depth)
    }
    mutating func superEncoder() -> any Encoder {
        writer.fail(codingPath, "superEncoder is not supported by the compact encoder")
        return StreamEncoder(writer: writer, depth: depth)
    }
    mutating func superEncoder(forKey key: Key) -> any Encoder { superEncoder() }
}

private struct StreamUnkeyed: UnkeyedEncodingContainer {
    let writer: StreamWriter
    let id: Int
    let depth: Int
    var codingPath: [any CodingKey] { writer.path(depth) }
    var count = 0

    private mutating func next() -> Bool {
        count += 1
        return writer.ready(id, depth: depth)
    }

    mutating func encodeNil() throws {
        if next() { writer.out.tag(CompactWriter.nullTag) }
    }
    mutating func encode<T: Encodable>(_ value: T) throws {
        if next() { try writer.encodeValue(value, key: nil) }
    }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        _ = next()
        return KeyedEncodingContainer(StreamKeyed<NestedKey>(writer: writer, id: writer.openContainer(array: false), depth: depth))
    }
    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        _ = next()
        return StreamUnkeyed(writer: writer, id: writer.openContainer(array: true), depth: depth)
    }
    mutating func superEncoder() -> any Encoder {
        writer.fail(codingPath, "superEncoder is not supported by the compact encoder")
        return StreamEncoder(writer: writer, depth: depth)
    }
}

private struct StreamSingle: SingleValueEncodingContainer {
    let writer: StreamWriter
    let depth: Int
    var codingPath: [any CodingKey] { writer.path(depth) }
    mutating func encodeNil() throws { writer.out.tag(CompactWriter.nullTag) }
    mutating func encode<T: Encodable>(_ value: T) throws { try writer.encodeValue(value, key: nil) }
}
