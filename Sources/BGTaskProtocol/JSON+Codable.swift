// Codable over ``JSON`` (no Foundation in the daemon or the CLI): SPEC §17's recordings are the core's
// Codable inputs written as JSON. Integers are kept exact (`int`), as everywhere in this module.

/// A coding failure: where (the coding path) and why.
public struct JSONCodingError: Error, Sendable, CustomStringConvertible {
    public var path: String
    public var reason: String
    public var description: String { path.isEmpty ? reason : "\(path): \(reason)" }

    /// A failure at `path` (the coding path), for `reason`.
    public init(_ path: [any CodingKey], _ reason: String) {
        self.path = path.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
        self.reason = reason
    }
}

extension JSON {
    /// `value` encoded (its `Encodable` conformance) as a JSON value.
    public static func encode<T: Encodable>(_ value: T) throws -> JSON {
        let node = EncodingNode()
        try value.encode(to: ValueEncoder(node: node, codingPath: []))
        return node.json
    }

    /// A `T` decoded (its `Decodable` conformance) from this value.
    public func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try T(from: ValueDecoder(value: self, codingPath: []))
    }
}

private final class EncodingNode {
    var scalar: JSON = .null
    var keyed: [String: EncodingNode]?
    var unkeyed: [EncodingNode]?

    var json: JSON {
        if let keyed { return .object(keyed.mapValues(\.json)) }
        if let unkeyed { return .array(unkeyed.map(\.json)) }
        return scalar
    }
}

private struct IndexKey: CodingKey {
    var stringValue: String { String(intValue ?? 0) }
    var intValue: Int?
    init(_ i: Int) { intValue = i }
    init?(stringValue: String) { return nil }
    init?(intValue: Int) { self.intValue = intValue }
}

/// The JSON of a value that is a JSON scalar (`nil`: it is not one); the tree encoder's and the compact one's.
func scalar(_ value: Any, _ path: [any CodingKey]) throws -> JSON? {
    switch value {
    case let v as Bool: return .bool(v)
    case let v as String: return .string(v)
    case let v as Double: return .double(v)
    case let v as Float: return .double(Double(v))
    case let v as Int: return .int(Int64(v))
    case let v as Int8: return .int(Int64(v))
    case let v as Int16: return .int(Int64(v))
    case let v as Int32: return .int(Int64(v))
    case let v as Int64: return .int(v)
    case let v as UInt: return try exact(v, path)
    case let v as UInt8: return .int(Int64(v))
    case let v as UInt16: return .int(Int64(v))
    case let v as UInt32: return .int(Int64(v))
    case let v as UInt64: return try exact(v, path)
    default: return nil
    }
}

private func exact<T: BinaryInteger>(_ v: T, _ path: [any CodingKey]) throws -> JSON {
    guard let i = Int64(exactly: v) else { throw JSONCodingError(path, "\(v) does not fit a 64-bit signed integer") }
    return .int(i)
}

private func encodeValue<T: Encodable>(_ value: T, into node: EncodingNode, _ path: [any CodingKey]) throws {
    if let s = try scalar(value, path) {
        node.scalar = s
    } else {
        try value.encode(to: ValueEncoder(node: node, codingPath: path))
    }
}

private struct ValueEncoder: Encoder {
    let node: EncodingNode
    var codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        if node.keyed == nil { node.keyed = [:] }
        return KeyedEncodingContainer(KeyedEncoder<Key>(node: node, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        if node.unkeyed == nil { node.unkeyed = [] }
        return UnkeyedEncoder(node: node, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer { SingleEncoder(node: node, codingPath: codingPath) }
}

private struct KeyedEncoder<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let node: EncodingNode
    var codingPath: [any CodingKey]

    private func child(_ key: Key) -> EncodingNode {
        let n = EncodingNode()
        node.keyed?[key.stringValue] = n
        return n
    }

    mutating func encodeNil(forKey key: Key) throws { child(key).scalar = .null }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        try encodeValue(value, into: child(key), codingPath + [key])
    }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        let n = child(key)
        n.keyed = [:]
        return KeyedEncodingContainer(KeyedEncoder<NestedKey>(node: n, codingPath: codingPath + [key]))
    }
    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let n = child(key)
        n.unkeyed = []
        return UnkeyedEncoder(node: n, codingPath: codingPath + [key])
    }
    mutating func superEncoder() -> any Encoder {
        let n = EncodingNode()
        node.keyed?["super"] = n
        return ValueEncoder(node: n, codingPath: codingPath)
    }
    mutating func superEncoder(forKey key: Key) -> any Encoder { ValueEncoder(node: child(key), codingPath: codingPath + [key]) }
}

private struct UnkeyedEncoder: UnkeyedEncodingContainer {
    let node: EncodingNode
    var codingPath: [any CodingKey]
    var count: Int { node.unkeyed?.count ?? 0 }

    private func next() -> EncodingNode {
        let n = EncodingNode()
        node.unkeyed?.append(n)
        return n
    }

    mutating func encodeNil() throws { next().scalar = .null }
    mutating func encode<T: Encodable>(_ value: T) throws {
        try encodeValue(value, into: next(), codingPath + [IndexKey(count)])
    }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let n = next()
        n.keyed = [:]
        return KeyedEncodingContainer(KeyedEncoder<NestedKey>(node: n, codingPath: codingPath))
    }
    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let n = next()
        n.unkeyed = []
        return UnkeyedEncoder(node: n, codingPath: codingPath)
    }
    mutating func superEncoder() -> any Encoder { ValueEncoder(node: next(), codingPath: codingPath) }
}

private struct SingleEncoder: SingleValueEncodingContainer {
    let node: EncodingNode
    var codingPath: [any CodingKey]
    mutating func encodeNil() throws { node.scalar = .null }
    mutating func encode<T: Encodable>(_ value: T) throws { try encodeValue(value, into: node, codingPath) }
}

// MARK: - Decoding

private func decodeValue<T: Decodable>(_ type: T.Type, from value: JSON, _ path: [any CodingKey]) throws -> T {
    func wrong() -> JSONCodingError { JSONCodingError(path, "expected \(T.self), found \(value.serialized())") }
    func integer<I: BinaryInteger>(_: I.Type) throws -> I {
        guard let i = value.intValue, let v = I(exactly: i) else { throw wrong() }
        return v
    }
    func cast(_ v: Any?) throws -> T {
        guard let t = v as? T else { throw wrong() }
        return t
    }
    switch type {
    case is Bool.Type:
        guard let b = value.boolValue else { throw wrong() }
        return try cast(b)
    case is String.Type:
        guard let s = value.stringValue else { throw wrong() }
        return try cast(s)
    case is Double.Type:
        guard let d = value.doubleValue else { throw wrong() }
        return try cast(d)
    case is Float.Type:
        guard let d = value.doubleValue else { throw wrong() }
        return try cast(Float(d))
    case is Int.Type: return try cast(integer(Int.self))
    case is Int8.Type: return try cast(integer(Int8.self))
    case is Int16.Type: return try cast(integer(Int16.self))
    case is Int32.Type: return try cast(integer(Int32.self))
    case is Int64.Type: return try cast(integer(Int64.self))
    case is UInt.Type: return try cast(integer(UInt.self))
    case is UInt8.Type: return try cast(integer(UInt8.self))
    case is UInt16.Type: return try cast(integer(UInt16.self))
    case is UInt32.Type: return try cast(integer(UInt32.self))
    case is UInt64.Type: return try cast(integer(UInt64.self))
    default: return try T(from: ValueDecoder(value: value, codingPath: path))
    }
}

private struct ValueDecoder: Decoder {
    let value: JSON
    var codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard let object = value.objectValue else { throw JSONCodingError(codingPath, "expected an object") }
        return KeyedDecodingContainer(KeyedDecoder<Key>(object: object, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard let array = value.arrayValue else { throw JSONCodingError(codingPath, "expected an array") }
        return UnkeyedDecoder(array: array, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { SingleDecoder(value: value, codingPath: codingPath) }
}

private struct KeyedDecoder<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let object: [String: JSON]
    var codingPath: [any CodingKey]
    var allKeys: [Key] { object.keys.compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool { object[key.stringValue] != nil }

    private func member(_ key: Key) throws -> JSON {
        guard let v = object[key.stringValue] else { throw JSONCodingError(codingPath + [key], "missing") }
        return v
    }

    func decodeNil(forKey key: Key) throws -> Bool { try member(key).isNull }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try decodeValue(type, from: member(key), codingPath + [key])
    }
    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try ValueDecoder(value: member(key), codingPath: codingPath + [key]).container(keyedBy: type)
    }
    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try ValueDecoder(value: member(key), codingPath: codingPath + [key]).unkeyedContainer()
    }
    func superDecoder() throws -> any Decoder { ValueDecoder(value: object["super"] ?? .null, codingPath: codingPath) }
    func superDecoder(forKey key: Key) throws -> any Decoder { ValueDecoder(value: try member(key), codingPath: codingPath + [key]) }
}

private struct UnkeyedDecoder: UnkeyedDecodingContainer {
    let array: [JSON]
    var codingPath: [any CodingKey]
    var currentIndex = 0
    var count: Int? { array.count }
    var isAtEnd: Bool { currentIndex >= array.count }

    init(array: [JSON], codingPath: [any CodingKey]) {
        self.array = array
        self.codingPath = codingPath
    }

    private mutating func next() throws -> (JSON, [any CodingKey]) {
        let path = codingPath + [IndexKey(currentIndex)]
        guard !isAtEnd else { throw JSONCodingError(path, "past the end of the array") }
        defer { currentIndex += 1 }
        return (array[currentIndex], path)
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, array[currentIndex].isNull else { return false }
        currentIndex += 1
        return true
    }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let (v, path) = try next()
        return try decodeValue(type, from: v, path)
    }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        let (v, path) = try next()
        return try ValueDecoder(value: v, codingPath: path).container(keyedBy: type)
    }
    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let (v, path) = try next()
        return try ValueDecoder(value: v, codingPath: path).unkeyedContainer()
    }
    mutating func superDecoder() throws -> any Decoder {
        let (v, path) = try next()
        return ValueDecoder(value: v, codingPath: path)
    }
}

private struct SingleDecoder: SingleValueDecodingContainer {
    let value: JSON
    var codingPath: [any CodingKey]
    func decodeNil() -> Bool { value.isNull }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try decodeValue(type, from: value, codingPath) }
}
