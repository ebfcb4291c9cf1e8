// swift-tools-version: 6.1
import PackageDescription

// swift-log's strict settings (its Package.swift): `any` for existentials, imports internal by default
// and visible only where imported, nonisolated async functions run on the caller's actor, and every
// public type says whether it is Sendable.
let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("NonisolatedNonsendingByDefault"),
    .unsafeFlags(["-Xfrontend", "-require-explicit-sendable"]),
]

let package = Package(
    name: "bgtaskd",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "bgtaskd", targets: ["bgtaskd"]),
        .executable(name: "bgtaskctl", targets: ["bgtaskctl"]),
        .executable(name: "bgtaskd-launcher", targets: ["bgtaskd-launcher"]),
        .executable(name: "bgtaskd-focus", targets: ["bgtaskd-focus"]),
        .library(name: "BGTaskClient", targets: ["BGTaskClient"]),
        // The Varlink framing, decoding and call checks the daemon runs: for FuzzTesting/ (a separate
        // package, kept out of the default build).
        .library(name: "BGTaskProtocol", targets: ["BGTaskProtocol"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.1.0"),
        .package(url: "https://github.com/x-sheep/swift-property-based.git", from: "2.0.0"),
    ],
    targets: [
        // The product's vocabulary: states, events, decisions, reasons, modes (SPEC names). Pure, no dependencies.
        .target(name: "BGTaskModel", swiftSettings: strict),
        // Pure decision core: no clock, no I/O.
        .target(
            name: "BGTaskCore",
            dependencies: ["BGTaskModel", .product(name: "HeapModule", package: "swift-collections")],
            swiftSettings: strict
        ),
        // Varlink framing, JSON, message types, interface descriptions. Pure.
        .target(name: "BGTaskProtocol", dependencies: ["BGTaskModel"], swiftSettings: strict),
        // systemd.syntax(7) parser, bgtaskd.conf and app manifests. Pure apart from reading files.
        // Its manifests name the core's background modes.
        .target(name: "BGTaskConfig", dependencies: ["BGTaskCore"], swiftSettings: strict),
        .systemLibrary(
            name: "CSystemd",
            pkgConfig: "libsystemd",
            providers: [.apt(["libsystemd-dev"])]
        ),
        // Starting apps (environment, user, fork/exec into a cgroup) and the io.bgtaskd.Launcher
        // messages: shared by bgtaskd (in-process spawn, launcher client) and bgtaskd-launcher.
        .target(name: "BGTaskLaunch", dependencies: ["BGTaskProtocol", "BGTaskConfig", "CSystemd"], swiftSettings: strict),
        // The I/O shell: Dispatch event loop, Varlink server, journal, sd_notify, config.
        .target(
            name: "BGTaskDaemon",
            dependencies: [
                "BGTaskCore", "BGTaskProtocol", "BGTaskConfig", "BGTaskLaunch", "CSystemd",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .target(name: "BGTaskClient", dependencies: ["BGTaskProtocol"], swiftSettings: strict),
        // SPEC §13, bgtaskd-focus: libwayland-client, the protocol's C glue (wayland-scanner, see
        // protocols/README.md), the pure debounced focus tracker, and the program.
        .systemLibrary(name: "CWayland", pkgConfig: "wayland-client", providers: [.apt(["libwayland-dev"])]),
        // Also logind's session (LockedHint, IdleHint) over libsystemd's sd-bus.
        .target(name: "CWlrToplevel", dependencies: ["CWayland"], linkerSettings: [.linkedLibrary("systemd")]),
        .target(name: "BGTaskFocus", swiftSettings: strict),
        .executableTarget(
            name: "bgtaskd-focus",
            dependencies: [
                "BGTaskFocus", "CWlrToplevel", "BGTaskClient", "BGTaskProtocol",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "bgtaskd",
            dependencies: ["BGTaskDaemon", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            swiftSettings: strict
        ),
        // Privilege separation: starts apps on bgtaskd's request, so that the daemon runs unprivileged.
        .executableTarget(
            name: "bgtaskd-launcher",
            dependencies: [
                "BGTaskLaunch", "BGTaskProtocol", "BGTaskConfig", "CSystemd",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "bgtaskctl",
            dependencies: [
                "BGTaskClient", "BGTaskProtocol", "BGTaskModel",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict
        ),
        // Test support: the Varlink certification server (org.varlink.certification) on our layer.
        .executableTarget(
            name: "varlink-certification",
            dependencies: ["BGTaskDaemon", "BGTaskProtocol"],
            path: "Tests/Support/varlink-certification",
            swiftSettings: strict
        ),
        // Test support: an app built on BGTaskClient that reports every event it gets (integration tests).
        .executableTarget(
            name: "bgtask-testapp",
            dependencies: ["BGTaskClient"],
            path: "Tests/Support/bgtask-testapp",
            swiftSettings: strict
        ),
        .testTarget(
            name: "BGTaskCoreTests",
            dependencies: ["BGTaskCore", .product(name: "PropertyBased", package: "swift-property-based")],
            swiftSettings: strict
        ),
        .testTarget(name: "BGTaskClientTests", dependencies: ["BGTaskClient", "BGTaskProtocol"], swiftSettings: strict),
        .testTarget(name: "BGTaskProtocolTests", dependencies: ["BGTaskProtocol"], swiftSettings: strict),
        .testTarget(name: "BGTaskConfigTests", dependencies: ["BGTaskConfig"], swiftSettings: strict),
        .testTarget(name: "BGTaskLaunchTests", dependencies: ["BGTaskLaunch", "BGTaskProtocol", "BGTaskConfig"], swiftSettings: strict),
        .testTarget(name: "BGTaskDaemonTests", dependencies: ["BGTaskDaemon", "CSystemd"], swiftSettings: strict),
        .testTarget(name: "BGTaskFocusTests", dependencies: ["BGTaskFocus"], swiftSettings: strict),
    ],
    swiftLanguageModes: [.v6]
)

// The example apps and the benchmark's native half are not part of the default build (`swift build`,
// `make test`): `make bench` and `make examples` set BGTASKD_EXTRAS=1 to add them.
if Context.environment["BGTASKD_EXTRAS"] == "1" {
    package.targets += [
        // Example: a mail app that finishes its sync in the background with a background task.
        .executableTarget(
            name: "mail-sync",
            dependencies: ["BGTaskClient"],
            path: "Examples/MailSync",
            swiftSettings: strict
        ),
        // `make bench`: the native baselines and clients (bench/bench.py drives it).
        .executableTarget(
            name: "bgtaskd-bench",
            dependencies: ["BGTaskClient", "BGTaskProtocol", "BGTaskCore", "BGTaskDaemon", "CSystemd"],
            path: "bench/swift",
            swiftSettings: strict
        ),
    ]
}
