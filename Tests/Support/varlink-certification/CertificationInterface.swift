import BGTaskProtocol

/// The `org.varlink.certification` interface as the Python `varlink` package ships it
/// (`varlink/tests/org.varlink.certification.varlink`), and the values its reference server expects.
enum Certification {
    static let interfaceName = "org.varlink.certification"

    static let description = """
        # Interface to test varlink implementations against.
        # First you write a varlink client calling:
        # Start, Test01, Test02, …, Test09, End
        # The return value of the previous call should be the argument of the next call.
        # Then you test this client against well known servers like python or rust from
        # https://github.com/varlink/
        #
        # Next you write a varlink server providing the same service as the well known ones.
        # Now run your client against it and run well known clients like python or rust
        # from https://github.com/varlink/ against your server. If all works out, then
        # your new language bindings should be varlink certified.
        interface org.varlink.certification

        type Interface (
          foo: ?[]?[string](foo, bar, baz),
          anon: (foo: bool, bar: bool)
        )

        type MyType (
          object: object,
          enum: (one, two, three),
          struct: (first: int, second: string),
          array: []string,
          dictionary: [string]string,
          stringset: [string](),
          nullable: ?string,
          nullable_array_struct: ?[](first: int, second: string),
          interface: Interface
        )

        method Start() -> (client_id: string)

        method Test01(client_id: string) -> (bool: bool)

        method Test02(client_id: string, bool: bool) -> (int: int)

        method Test03(client_id: string, int: int) -> (float: float)

        method Test04(client_id: string, float: float) -> (string: string)

        method Test05(client_id: string, string: string) -> (
          bool: bool,
          int: int,
          float: float,
          string: string
        )

        method Test06(
          client_id: string,
          bool: bool,
          int: int,
          float: float,
          string: string
        ) -> (
          struct: (
            bool: bool,
            int: int,
            float: float,
            string: string
          )
        )

        method Test07(
          client_id: string,
          struct: (
            bool: bool,
            int: int,
            float: float,
            string: string
          )
        ) -> (map: [string]string)

        method Test08(client_id: string, map: [string]string) -> (set: [string]())

        method Test09(client_id: string, set: [string]()) -> (mytype: MyType)

        # returns more than one reply with "continues"
        method Test10(client_id: string, mytype: MyType) -> (string: string)

        # must be called as "oneway"
        method Test11(client_id: string, last_more_replies: []string) -> ()

        method End(client_id: string) -> (all_ok: bool)

        error ClientIdError ()
        error CertificationError (wants: object, got: object)

        """

    /// The JSON shape of a method's input, enough to reject what the reference server's generic layer
    /// rejects (`filter_params`): unknown parameters, and missing or mistyped scalars.
    enum Kind {
        case string, bool, int, float
        /// A struct, map, set or custom type: an object; null counts as empty.
        case object
        /// An array; null counts as empty.
        case array
    }

    /// Input parameters of every method, in declaration order.
    static let inputs: [String: [(name: String, kind: Kind)]] = [
        "Start": [],
        "Test01": [("client_id", .string)],
        "Test02": [("client_id", .string), ("bool", .bool)],
        "Test03": [("client_id", .string), ("int", .int)],
        "Test04": [("client_id", .string), ("float", .float)],
        "Test05": [("client_id", .string), ("string", .string)],
        "Test06": [("client_id", .string), ("bool", .bool), ("int", .int), ("float", .float), ("string", .string)],
        "Test07": [("client_id", .string), ("struct", .object)],
        "Test08": [("client_id", .string), ("map", .object)],
        "Test09": [("client_id", .string), ("set", .object)],
        "Test10": [("client_id", .string), ("mytype", .object)],
        "Test11": [("client_id", .string), ("last_more_replies", .array)],
        "End": [("client_id", .string)],
    ]

    /// The method each one must be followed by (the reference server's `next_method`).
    static let successor: [String: String] = [
        "Start": "Test01", "Test01": "Test02", "Test02": "Test03", "Test03": "Test04", "Test04": "Test05",
        "Test05": "Test06", "Test06": "Test07", "Test07": "Test08", "Test08": "Test09", "Test09": "Test10",
        "Test10": "Test11", "Test11": "End", "End": "Start",
    ]

    static let pingString = "a lot of string"

    /// Test06's parameters and its reply's `struct` (Test07's parameter).
    static let scalars: [String: JSON] = [
        "bool": false, "int": 2, "float": .double(Double.pi), "string": .string(pingString),
    ]

    static let map: JSON = ["foo": "Foo", "bar": "Bar"]

    /// A `[string]()` set as it travels: an object whose values are empty objects.
    static let set: JSON = ["one": [:], "two": [:], "three": [:]]

    static let interfaceValue: JSON = [
        "foo": [nil, ["foo": "foo", "bar": "bar"], nil, ["one": "foo", "two": "bar"]],
        "anon": ["foo": true, "bar": false],
    ]

    /// Test09's reply `mytype`, with its nullable members present as null.
    static let myType: JSON = [
        "object": ["method": "org.varlink.certification.Test09", "parameters": ["map": map]],
        "enum": "two",
        "struct": ["first": 1, "second": "2"],
        "array": ["one", "two", "three"],
        "dictionary": map,
        "stringset": set,
        "nullable": nil,
        "nullable_array_struct": nil,
        "interface": interfaceValue,
    ]

    /// What Test10 must receive back: `myType` without the nullable members.
    static var myTypeWanted: JSON {
        guard case .object(var o) = myType else { return myType }
        o["nullable"] = nil
        o["nullable_array_struct"] = nil
        return .object(o)
    }

    static let streamedReplies = (1...10).map { "Reply number \($0)" }
}
