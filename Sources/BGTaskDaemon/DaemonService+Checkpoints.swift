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
    /// meanwhile) and then, on the queue, keeps the bytes in place of the copy. A checkpoint whose encoding failed, or whose thread could not be
    /// made, stays a copy of the core: correct, only larger.
    func compactCheckpoint() {
        guard recording?.compacting == false, let (number, core) = recording?.checkpointToCompact else { return }
        recording?.compacting = true
        let job = CheckpointJob(core)
        let queue = self.queue
        // At the daemon's own priority (nil), not the lowest: the copy holds its buffers until it is encoded
        // (~0.25 s of CPU with 10,000 apps and 100,000 assertions, once per half of RecordMaxBytes=). One at
        // a time: a small ring takes checkpoints faster than a large core encodes; the newest left a copy
        // is encoded next.
        let started = runOnBackgroundThread(nice: nil) { @Sendable in
            let bytes = job.take().flatMap { try? InputRecorder.encode($0) }
            queue.async { @Sendable [weak self] in
                guard let self else { return }
                recording?.compacting = false
                // Not encoded: it stays a copy (not tried again; the next checkpoint is).
                guard let bytes else { return }
                recording?.compacted(number, bytes)
                // The copy's buffers, freed now, go back to the system (RSS), off the queue.
                runOnBackgroundThread(nice: nil) { malloc_trim(0) }
                compactCheckpoint()
            }
        }
        if !started { recording?.compacting = false }
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
