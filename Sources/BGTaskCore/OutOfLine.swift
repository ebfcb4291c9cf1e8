/// An optional value kept out of line: one pointer in its record instead of the value's own size, for a
/// large field that is mostly empty. `AppRecord`'s two `Decision?` fields took 336 of its 712 bytes;
/// with 10,000 apps, every copy of the app table (a recording's checkpoint diverging from the live core)
/// carried them. Immutable once boxed (a new value, a new box), so copies share it safely.
///
/// Encoded exactly as the optional itself (the key absent when `nil`): recordings and checkpoints keep
/// their shape.
@propertyWrapper
struct OutOfLine<Value: Sendable & Codable>: Sendable {
    private final class Box: Sendable {
        let value: Value
        init(_ value: Value) { self.value = value }
    }

    private var box: Box?

    init(wrappedValue: Value?) { box = wrappedValue.map(Box.init) }

    var wrappedValue: Value? {
        get { box?.value }
        set { box = newValue.map(Box.init) }
    }
}

extension OutOfLine: Codable {
    init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        box = c.decodeNil() ? nil : Box(try c.decode(Value.self))
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        if let value = wrappedValue { try c.encode(value) } else { try c.encodeNil() }
    }
}

// The synthesised coding of a record calls these for its `@OutOfLine` fields: absent when `nil`, as an
// optional field is.
extension KeyedDecodingContainer {
    func decode<V>(_ type: OutOfLine<V>.Type, forKey key: Key) throws -> OutOfLine<V> {
        OutOfLine(wrappedValue: try decodeIfPresent(V.self, forKey: key))
    }
}

extension KeyedEncodingContainer {
    mutating func encode<V>(_ value: OutOfLine<V>, forKey key: Key) throws {
        try encodeIfPresent(value.wrappedValue, forKey: key)
    }
}
