// The module apps import (`import BGTaskClient`): everything of BGTaskClientCore, plus the one part of the
// API that needs Foundation's `Date`. bgtaskctl and bgtaskd-focus link BGTaskClientCore only, so that no
// program of the package links FoundationEssentials (docs/performance.md row 8).
@_exported public import BGTaskClientCore

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

extension BGTaskRequest {
    /// The task runs no earlier than this (wall clock). nil: as soon as the conditions allow.
    public var earliestBeginDate: Date? {
        get { earliestBeginSeconds.map { Date(timeIntervalSince1970: $0) } }
        set { earliestBeginSeconds = newValue?.timeIntervalSince1970 }
    }
}
