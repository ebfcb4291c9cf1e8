import BGTaskCore
import CSystemd
import Dispatch

#if canImport(Glibc)
import Glibc
#endif

// SPEC §17: the recording kept compact off the daemon's queue (InputRecorder+Compact.swift): its newest
// checkpoint, so that it does not keep the core's old buffers once the live core changes them, and each full
// block of inputs, so that the ring holds several times more inputs in its `RecordMaxBytes=` and takes
// checkpoints that much less often.
extension DaemonService {
    /// Encodes the newest checkpoint still a copy of the core, else the oldest full block of inputs still as
    /// taken, on a thread of its own (the daemon's queue goes on taking inputs meanwhile), then, on the
    /// queue, keeps the bytes in their place and goes on with the next. One at a time. What failed to
    /// encode, or whose thread could not be made, stays as it was: correct, only larger.
    func compactRecording() {
        guard recording?.compacting == false else { return }
        if let (number, core) = recording?.checkpointToCompact {
            compact(checkpoint: number, core)
        } else if let (block, entries) = recording?.blockToCompact {
            compact(block: block, entries)
        }
    }

    private func compact(checkpoint number: Int, _ core: DaemonCore) {
        recording?.compacting = true
        let job = CheckpointJob(core)
        let queue = self.queue
        // At the daemon's own priority (nil), not the lowest: the copy holds its buffers until it is encoded
        // (~0.1 s of CPU with 10,000 apps and 100,000 assertions, once per half of RecordMaxBytes=). A small
        // ring takes checkpoints faster than a large core encodes; the newest left a copy is encoded next.
        let started = runOnBackgroundThread(nice: nil) { @Sendable in
            let bytes = job.take().flatMap { try? InputRecorder.encode($0) }
            queue.async { @Sendable [weak self] in
                guard let self else { return }
                recording?.compacting = false
                // Not encoded: it stays a copy (not tried again; the next checkpoint is).
                if let bytes {
                    recording?.compacted(number, bytes)
                    // The copy's buffers, freed now, go back to the system (RSS), off the queue.
                    runOnBackgroundThread(nice: nil) { malloc_trim(0) }
                }
                compactRecording()
            }
        }
        if !started { recording?.compacting = false }
    }

    private func compact(block: InputRecorder.BlockID, _ entries: [InputRecorder.Entry]) {
        recording?.compacting = true
        let queue = self.queue
        let started = runOnBackgroundThread(nice: nil) { @Sendable in
            let bytes = try? InputRecorder.encode(block: entries)
            // The entries (this closure holds them too) are let go of on this thread, once the queue has put
            // the bytes in their place: thousands of inputs' strings freed on the queue would delay the calls
            // behind them.
            let kept = DispatchSemaphore(value: 0)
            queue.async { @Sendable [weak self] in
                defer { kept.signal() }
                guard let self else { return }
                recording?.compacting = false
                if let bytes {
                    recording?.compacted(block: block, bytes)
                } else {
                    // Not encoded: it stays as taken, and so do the blocks after it (never tried again).
                    recording?.compactingStopped = true
                }
                compactRecording()
            }
            kept.wait()
            withExtendedLifetime(entries) {}
        }
        // No thread (the process is out of them): the values stay as they are, counted, and no thread is
        // asked for again at each input that follows.
        if !started {
            recording?.compacting = false
            recording?.compactingStopped = true
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
