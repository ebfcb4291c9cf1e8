/// A value's fields in one shared heap box, copied only when a value that shares it changes them: each copy
/// of the value is one reference count. For values that are copied many times on their way and seldom
/// changed (BGTaskCore's `Decision`, BGTaskProtocol's `VarlinkCall`: bench/README.md, "Rows 1 and 2b under
/// callgrind").
public struct CopyOnWrite<Fields> {
    /// Written only while uniquely referenced (``modify(_:)``), so a box two values share is never written.
    /// Release builds drop the run-time exclusivity check of `fields` (debug builds keep it): reached from
    /// other modules through inlined code, every read of a field was a checked access (~130 instructions).
    @usableFromInline final class Box {
        #if !DEBUG
        @exclusivity(unchecked)
        #endif
        @usableFromInline var fields: Fields
        @usableFromInline init(_ fields: Fields) { self.fields = fields }
    }

    @usableFromInline var box: Box

    @inlinable public init(_ fields: Fields) { box = Box(fields) }

    /// The fields, read where they are.
    @inlinable public var fields: Fields { box.fields }

    /// One field, read where it is (not from a copy of all of them).
    @inlinable public subscript<Value>(_ field: KeyPath<Fields, Value>) -> Value { box.fields[keyPath: field] }

    /// Changes the fields, the box first made this value's own if another value shares it.
    @inlinable public mutating func modify<R>(_ change: (inout Fields) throws -> R) rethrows -> R {
        if !isKnownUniquelyReferenced(&box) { box = Box(box.fields) }
        return try change(&box.fields)
    }

    /// Whether both share one box (their fields are then the same).
    @inlinable public func shares(with other: CopyOnWrite<Fields>) -> Bool { box === other.box }
}

// A box is written only by the one value that holds it (``modify(_:)``), so fields safe to send make a value
// safe to send.
extension CopyOnWrite: @unchecked Sendable where Fields: Sendable {}

// The box itself is not sent: the value holding it is, on the condition above.
@available(*, unavailable)
extension CopyOnWrite.Box: Sendable {}
