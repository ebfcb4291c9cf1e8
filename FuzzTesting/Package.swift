// swift-tools-version: 6.1
// Fuzz targets for bgtaskd, kept out of the default build (as swift-nio-http2 keeps its FuzzTesting/).
// Build with libFuzzer (see README.md here, or `make fuzz` / `make test-fuzz` from the repository root):
//   swift build -c debug --sanitize=fuzzer -Xswiftc -sanitize=fuzzer,address
import PackageDescription

let package = Package(
    name: "FuzzTesting",
    dependencies: [
        .package(name: "bgtaskd", path: ".."),
    ],
    targets: [
        // The daemon's Varlink input path: framing, call decoding and the checks against the
        // interface descriptions (BGTaskProtocol's VarlinkInboundDecoder and VarlinkInterfaceRegistry).
        .executableTarget(
            name: "FuzzVarlinkDecoding",
            dependencies: [.product(name: "BGTaskProtocol", package: "bgtaskd")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
