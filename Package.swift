// swift-tools-version: 6.2
import PackageDescription

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
        .package(url: "https://github.com/apple/swift-log.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.1.0"),
        .package(url: "https://github.com/x-sheep/swift-property-based.git", from: "2.0.0"),
    ],
    targets: [
        // The product's vocabulary: states, events, decisions, reasons, modes (SPEC names). Pure, no dependencies.
        .target(name: "BGTaskModel"),
        // Pure decision core: no clock, no I/O.
        .target(
            name: "BGTaskCore",
            dependencies: ["BGTaskModel", .product(name: "HeapModule", package: "swift-collections")]
        ),
        // Varlink framing, JSON, message types, interface descriptions. Pure.
        .target(name: "BGTaskProtocol", dependencies: ["BGTaskModel"]),
        // systemd.syntax(7) parser, bgtaskd.conf and app manifests. Pure apart from reading files.
        // Its manifests name the vocabulary's background modes; it does not link the core, so neither does
        // bgtaskd-launcher (1 MB of code less, docs/performance.md row 8).
        .target(name: "BGTaskConfig", dependencies: ["BGTaskModel"]),
        .systemLibrary(
            name: "CSystemd",
            pkgConfig: "libsystemd",
            providers: [.apt(["libsystemd-dev"])]
        ),
        // Starting apps (environment, user, fork/exec into a cgroup) and the io.bgtaskd.Launcher
        // messages: shared by bgtaskd (in-process spawn, launcher client) and bgtaskd-launcher.
        .target(name: "BGTaskLaunch", dependencies: ["BGTaskProtocol", "BGTaskConfig", "CSystemd"]),
        // The Varlink server: connections on one epoll thread entering one serial queue, limits, holds,
        // and an in-memory transport for tests. Knows nothing of bgtaskd's interfaces.
        .target(name: "BGTaskVarlink", dependencies: ["BGTaskProtocol", "CSystemd"]),
        // The I/O shell: Dispatch event loop, journal, sd_notify, config, processes, freezers.
        .target(
            name: "BGTaskDaemon",
            dependencies: [
                "BGTaskCore", "BGTaskProtocol", "BGTaskVarlink", "BGTaskConfig", "BGTaskLaunch", "CSystemd",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The app library without Foundation: BGApplication, scenes, tasks, the scheduler. bgtaskctl and
        // bgtaskd-focus link only this, so that no program of the package needs FoundationEssentials.
        .target(name: "BGTaskClientCore", dependencies: ["BGTaskProtocol", "BGTaskModel"]),
        // What apps import: BGTaskClientCore re-exported, plus BGTaskRequest.earliestBeginDate (a `Date`).
        .target(name: "BGTaskClient", dependencies: ["BGTaskClientCore"]),
        // SPEC §13, bgtaskd-focus: libwayland-client, the protocol's C glue (wayland-scanner, see
        // protocols/README.md), the pure debounced focus tracker, and the program.
        .systemLibrary(name: "CWayland", pkgConfig: "wayland-client", providers: [.apt(["libwayland-dev"])]),
        // Also logind's session (LockedHint, IdleHint) over libsystemd's sd-bus.
        .target(name: "CWlrToplevel", dependencies: ["CWayland"], linkerSettings: [.linkedLibrary("systemd")]),
        .target(name: "BGTaskFocus", dependencies: ["BGTaskModel"]),
        .executableTarget(
            name: "bgtaskd-focus",
            dependencies: [
                "BGTaskFocus", "CWlrToplevel", "BGTaskClientCore", "BGTaskProtocol", "BGTaskModel", "BGTaskCommandLine",
            ]
        ),
        // The programs' command lines (long options with values, --help, --version; bgtaskctl's verbs:
        // VerbLine), without ArgumentParser, which would link FoundationEssentials (docs/performance.md row 8).
        .target(name: "BGTaskCommandLine"),
        .executableTarget(
            name: "bgtaskd",
            // No ArgumentParser: it links FoundationEssentials (BGTaskCommandLine).
            dependencies: ["BGTaskDaemon", "BGTaskCommandLine"]
        ),
        // Privilege separation: starts apps on bgtaskd's request, so that the daemon runs unprivileged.
        .executableTarget(
            name: "bgtaskd-launcher",
            dependencies: [
                "BGTaskLaunch", "BGTaskProtocol", "BGTaskConfig", "CSystemd", "BGTaskCommandLine",
            ]
        ),
        // bgtaskctl's pure half: typed daemon replies in, lines out (tables, durations, colour and width
        // decisions, error sentences). No ArgumentParser, no I/O but a terminal probe of a given descriptor.
        .target(name: "BGTaskCtlKit", dependencies: ["BGTaskClientCore", "BGTaskProtocol", "BGTaskModel"]),
        .executableTarget(
            name: "bgtaskctl",
            dependencies: [
                "BGTaskCtlKit", "BGTaskClientCore", "BGTaskProtocol", "BGTaskModel", "BGTaskCore", "BGTaskCommandLine",
            ]
        ),
        // Test support: the Varlink certification server (org.varlink.certification) on our layer.
        .executableTarget(
            name: "varlink-certification",
            dependencies: ["BGTaskVarlink", "BGTaskProtocol"],
            path: "Tests/Support/varlink-certification"
        ),
        // Test support: an app built on BGTaskClient that reports every event it gets (integration tests).
        .executableTarget(
            name: "bgtask-testapp",
            dependencies: ["BGTaskClient"],
            path: "Tests/Support/bgtask-testapp"
        ),
        .testTarget(
            name: "BGTaskCoreTests",
            dependencies: ["BGTaskCore", .product(name: "PropertyBased", package: "swift-property-based")]
        ),
        .testTarget(name: "BGTaskClientTests", dependencies: ["BGTaskClient", "BGTaskClientCore", "BGTaskProtocol", "BGTaskModel"]),
        .testTarget(name: "BGTaskProtocolTests", dependencies: ["BGTaskProtocol"]),
        .testTarget(name: "BGTaskConfigTests", dependencies: ["BGTaskConfig", "BGTaskModel"]),
        .testTarget(name: "BGTaskLaunchTests", dependencies: ["BGTaskLaunch", "BGTaskProtocol", "BGTaskConfig"]),
        .testTarget(name: "BGTaskVarlinkTests", dependencies: ["BGTaskVarlink", "BGTaskProtocol", "CSystemd"]),
        .testTarget(name: "BGTaskDaemonTests", dependencies: ["BGTaskDaemon", "BGTaskVarlink", "CSystemd"]),
        .testTarget(name: "BGTaskFocusTests", dependencies: ["BGTaskFocus"]),
        .testTarget(name: "BGTaskCommandLineTests", dependencies: ["BGTaskCommandLine"]),
        .testTarget(name: "BGTaskCtlKitTests", dependencies: ["BGTaskCtlKit", "BGTaskProtocol", "BGTaskModel"]),
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
            path: "Examples/MailSync"
        ),
        // Example: a two-window app (scenes, SPEC §15) that writes a snapshot of each window.
        .executableTarget(
            name: "notes",
            dependencies: ["BGTaskClient"],
            path: "Examples/Notes"
        ),
        // `make bench`: the native baselines and clients (bench/bench.py drives it).
        .executableTarget(
            name: "bgtaskd-bench",
            dependencies: ["BGTaskClient", "BGTaskProtocol", "BGTaskVarlink", "BGTaskCore", "BGTaskDaemon", "CSystemd"],
            path: "bench/swift"
        ),
    ]
}

// Strict settings for every Swift target, in one loop as swift-log does, and no unsafe flags anywhere, so an
// app package can depend on BGTaskClient by version (IntegrationTests/check-versioned-dependency.sh builds one):
// `any` for existentials, imports internal by default and visible only where imported, nonisolated async
// functions run on the caller's actor, and every public type says whether it is Sendable (a warning, and
// the build is kept warning-free by scripts/build-warning-free.sh).
for target in package.targets where target.type != .system {
    var settings = target.swiftSettings ?? []
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    settings.append(.enableUpcomingFeature("InternalImportsByDefault"))
    settings.append(.enableUpcomingFeature("MemberImportVisibility"))
    settings.append(.enableUpcomingFeature("NonisolatedNonsendingByDefault"))
    settings.append(.treatWarning("ExplicitSendable", as: .warning))
    target.swiftSettings = settings
}
