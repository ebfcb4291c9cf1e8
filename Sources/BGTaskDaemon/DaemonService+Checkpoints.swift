import BGTaskCore
import CSystemd
import Dispatch

#if canImport(Glibc)
import Glibc
#endif

// SPEC §17: the recording's newest checkpoint encoded compactly off the daemon's queue
// (InputRecorder+Compact.swift), so that it does not keep the core's old buffers once the live core changes
// them.
extension DaemonService {
    /// Encodes the newest checkpoint on a thread of its own (the daemon's queue goes on taking inputs
    /// meanwhile; the copy being encoded is the only thing that holds its buffers) and then, on the queue,
    /// keeps the bytes in place of the copy. A checkpoint whose encoding failed, or whose thread could not be
    /// made, stays a copy of the core: correct, only larger.
    func compactCheckpoint() {
        guard let (number, core) = recording?.checkpointToCompact else { return }
        let job = CheckpointJob(core)
        let queue = self.queue
        runOnBackgroundThread { @Sendable [weak self] in
            let bytes = job.take().flatMap { try? InputRecorder.encode($0) }
            // The JSON value the encoding went through is freed: back to the system (RSS at rest).
            malloc_trim(0)
            guard let bytes else { return }
            queue.async { @Sendable [weak self] in self?.recording?.compacted(number, bytes) }
        }
    }
}

/// The copy of the core to encode, given up by the thread as soon as it is encoded.
private final class CheckpointJob: @unchecked Sendable {
    private var core: DaemonCore?
    init(_ core: DaemonCore) { self.core = core }
    func take() -> DaemonCore? {
        defer { core = nil }
        return core
    }
}
