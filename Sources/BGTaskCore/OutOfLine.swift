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

/// A value kept out of line that is mostly its default (`Value()`): no box at all while it is, one pointer in
/// its record instead of the value's size. `AppRecord`'s device rules and scenes (57 bytes each) and its
/// wake and pending launch took 155 of its 384 bytes, at their defaults in nearly every app. A change boxes
/// a new value (copies share the old one safely). Encoded as the value itself.
@propertyWrapper
struct Defaulted<Value: Sendable & Codable & Equatable & DefaultInitializable>: Sendable {
    private final class Box: Sendable {
        let value: Value
        init(_ value: Value) { self.value = value }
    }

    private var box: Box?

    init(wrappedValue: Value) { box = wrappedValue == Value() ? nil : Box(wrappedValue) }

    var wrappedValue: Value {
        get { box?.value ?? Value() }
        set { box = newValue == Value() ? nil : Box(newValue) }
    }
}

/// A type whose `init()` is its usual value (see ``Defaulted``).
protocol DefaultInitializable { init() }

extension Defaulted: Codable {
    init(from decoder: any Decoder) throws {
        self.init(wrappedValue: try decoder.singleValueContainer().decode(Value.self))
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(wrappedValue)
    }
}
