// An `Encodable` value written straight into ``JSON/compact()``'s form, as it encodes: no `JSON` tree in
// between (a core with 100,000 assertions would build one of ~100 MiB to write ~5 MiB). The containers a
// value opens are closed when a container of an outer value writes again, or when the value's `encode(to:)`
// returns; a container written to after that (out of order), or `superEncoder`, is refused with an error
// (`JSON.encode(_:)` then `compact()` takes any order). `JSON(compact: JSON.compactEncode(v))` equals
// `JSON.encode(v)` (`CheckpointCompactTests`).

extension JSON {
    /// `value` encoded (its `Encodable` conformance) in the compact form ``JSON/init(compact:)`` reads.
    public static func compactEncode<T: Encodable>(_ value: T) throws -> [UInt8] {
        let w = StreamWriter()
        w.out.bytes.reserveCapacity(1 << 16)
        w.out.bytes.append(0xB1)
        try w.encodeValue(value, path: [])
        if let failure = w.failure { throw failure }
        return w.out.bytes
    }
}

private final class StreamWriter {
    var out = CompactWriter()
    /// The open containers, innermost last: their numbers and whether each is an array.
    var open: [(id: Int, array: Bool)] = []
    var nextID = 0
    var failure: JSONCodingError?

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

    /// Before container `id` writes: the containers opened inside it are done. False: it is closed already.
    func ready(_ id: Int, _ path: [any CodingKey]) -> Bool {
        guard let k = open.lastIndex(where: { $0.id == id }) else {
            fail(path, "written to after it was closed")
            return false
        }
        close(to: k + 1)
        return true
    }

    func encodeValue<T: Encodable>(_ value: T, path: [any CodingKey]) throws {
        // A scalar as the tree encoder reads it (`scalar`), written as `JSON.compact()` writes it.
        if let json = try scalar(value, path) {
            out.write(json)
            return
        }
        let depth = open.count, before = out.bytes.count
        let encoder = StreamEncoder(writer: self, codingPath: path)
        try value.encode(to: encoder)
        // Nothing written: the value is null (as `JSON.encode`'s tree has it).
        if out.bytes.count == before { out.tag(CompactWriter.nullTag) }
        close(to: depth)
    }
}

private struct StreamEncoder: Encoder {
    let writer: StreamWriter
    var codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(StreamKeyed<Key>(writer: writer, id: writer.openContainer(array: false), codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        StreamUnkeyed(writer: writer, id: writer.openContainer(array: true), codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer { StreamSingle(writer: writer, codingPath: codingPath) }
}

private struct StreamKeyed<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let writer: StreamWriter
    let id: Int
    var codingPath: [any CodingKey]

    /// Ready to write the member `key`: its name written.
    private func member(_ key: Key) -> Bool {
        guard writer.ready(id, codingPath + [key]) else { return false }
        writer.out.string(key.stringValue)
        return true
    }

    mutating func encodeNil(forKey key: Key) throws {
        if member(key) { writer.out.tag(CompactWriter.nullTag) }
    }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        if member(key) { try writer.encodeValue(value, path: codingPath + [key]) }
    }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        _ = member(key)
        return KeyedEncodingContainer(StreamKeyed<NestedKey>(writer: writer, id: writer.openContainer(array: false), codingPath: codingPath + [key]))
    }
    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        _ = member(key)
        return StreamUnkeyed(writer: writer, id: writer.openContainer(array: true), codingPath: codingPath + [key])
    }
    mutating func superEncoder() -> any Encoder {
        writer.fail(codingPath, "superEncoder is not supported by the compact encoder")
        return StreamEncoder(writer: writer, codingPath: codingPath)
    }
    mutating func superEncoder(forKey key: Key) -> any Encoder { superEncoder() }
}

private struct StreamUnkeyed: UnkeyedEncodingContainer {
    let writer: StreamWriter
    let id: Int
    var codingPath: [any CodingKey]
    var count = 0

    private mutating func next() -> Bool {
        count += 1
        return writer.ready(id, codingPath)
    }

    mutating func encodeNil() throws {
        if next() { writer.out.tag(CompactWriter.nullTag) }
    }
    mutating func encode<T: Encodable>(_ value: T) throws {
        if next() { try writer.encodeValue(value, path: codingPath) }
    }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        _ = next()
        return KeyedEncodingContainer(StreamKeyed<NestedKey>(writer: writer, id: writer.openContainer(array: false), codingPath: codingPath))
    }
    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        _ = next()
        return StreamUnkeyed(writer: writer, id: writer.openContainer(array: true), codingPath: codingPath)
    }
    mutating func superEncoder() -> any Encoder {
        writer.fail(codingPath, "superEncoder is not supported by the compact encoder")
        return StreamEncoder(writer: writer, codingPath: codingPath)
    }
}

private struct StreamSingle: SingleValueEncodingContainer {
    let writer: StreamWriter
    var codingPath: [any CodingKey]
    mutating func encodeNil() throws { writer.out.tag(CompactWriter.nullTag) }
    mutating func encode<T: Encodable>(_ value: T) throws { try writer.encodeValue(value, path: codingPath) }
}
