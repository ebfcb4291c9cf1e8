import BGTaskCore
import BGTaskProtocol

/// The refresh calls decoded into the ``RefreshMachine``'s inputs (the machine answers them).
extension RefreshController {
    /// io.bgtaskd.App methods not handled by the service; false: not one of ours.
    func handleApp(_ request: VarlinkRequest, app: AppID) -> Bool {
        let p = request.call.parameters
        switch request.call.methodName {
        case "SubmitTaskRequest":
            guard let identifier = p["identifier"]?.stringValue, !identifier.isEmpty else {
                request.fail(.invalidParameter("identifier"))
                return true
            }
            guard let kind = p["kind"]?.stringValue.flatMap(TaskKind.init(rawValue:)) else {
                request.fail(.invalidParameter("kind"))
                return true
            }
            var begin: RealtimeInstant?
            if let raw = p["earliestBeginUSec"], raw != .null {
                guard let us = raw.intValue, us >= 0 else {
                    request.fail(.invalidParameter("earliestBeginUSec"))
                    return true
                }
                begin = RealtimeInstant(microsecondsSinceEpoch: us)
            }
            guard let network = optionalBool(p["requiresNetwork"]) else {
                request.fail(.invalidParameter("requiresNetwork"))
                return true
            }
            guard let power = optionalBool(p["requiresExternalPower"]) else {
                request.fail(.invalidParameter("requiresExternalPower"))
                return true
            }
            let task = TaskRequest(
                identifier: identifier, kind: kind, earliestBegin: begin, requiresNetwork: network ?? false,
                requiresExternalPower: power ?? false)
            feed(.taskSubmitted(app, task), call: request)
        case "CancelTaskRequest":
            guard let identifier = p["identifier"]?.stringValue else {
                request.fail(.invalidParameter("identifier"))
                return true
            }
            feed(.taskCancelled(app, identifier: identifier), call: request)
        case "CancelAllTaskRequests":
            feed(.allTasksCancelled(app), call: request)
        case "PendingTaskRequests":
            request.reply(["requests": .array(machine.requests(for: app).map(RefreshState.requestJSON))])
        case "CompleteTask":
            guard let identifier = p["identifier"]?.stringValue else {
                request.fail(.invalidParameter("identifier"))
                return true
            }
            guard let success = p["success"]?.boolValue else {
                request.fail(.invalidParameter("success"))
                return true
            }
            host?.run(.taskCompleted(app, identifier: identifier, success: success), for: request, answer: nil)
        default:
            return false
        }
        return true
    }

    /// `nil`: invalid; `.some(nil)`: absent or null.
    private func optionalBool(_ value: JSON?) -> Bool?? {
        guard let value, value != .null else { return .some(nil) }
        guard let b = value.boolValue else { return nil }
        return .some(b)
    }

    /// io.bgtaskd.Manager methods not handled by the service; false: not one of ours. The service has
    /// already refused control methods to callers that may not control (root or `ControlGroup=`);
    /// `appParameter` answers `NoSuchApp` and `InvalidParameter` itself.
    func handleManager(_ request: VarlinkRequest, appParameter: (VarlinkRequest) -> AppID?) -> Bool {
        let p = request.call.parameters
        switch request.call.methodName {
        case "SetRefreshPolicy":
            guard let app = appParameter(request) else { return true }
            guard let enabled = p["enabled"]?.boolValue else {
                request.fail(.invalidParameter("enabled"))
                return true
            }
            feed(.appSettingRequested(app, enabled: enabled), call: request)
        case "SetGlobalRefresh":
            guard let mode = p["mode"]?.stringValue.flatMap(RefreshMode.init(rawValue:)) else {
                request.fail(.invalidParameter("mode"))
                return true
            }
            feed(.globalModeRequested(mode), call: request)
        case "SetLowPowerMode":
            guard let enabled = p["enabled"]?.boolValue else {
                request.fail(.invalidParameter("enabled"))
                return true
            }
            feed(.lowPowerModeRequested(enabled), call: request)
        case "SetConditions":
            guard let power = optionalBool(p["onExternalPower"]) else {
                request.fail(.invalidParameter("onExternalPower"))
                return true
            }
            var network: NetworkCondition?
            if let raw = p["network"], raw != .null {
                guard let n = raw.stringValue.flatMap(NetworkCondition.init(rawValue:)) else {
                    request.fail(.invalidParameter("network"))
                    return true
                }
                network = n
            }
            feed(.conditionsRequested(onExternalPower: power, network: network), call: request)
        case "WakeForRemoteNotification":
            guard let app = appParameter(request) else { return true }
            var payload: Payload?
            if let raw = p["payload"], raw != .null {
                guard raw.objectValue != nil else {
                    request.fail(.invalidParameter("payload"))
                    return true
                }
                payload = Payload(json: raw.serialized())
            }
            feed(.remoteNotificationRequested(app), call: request, payload: payload)
        case "RunTaskNow":
            guard let app = appParameter(request) else { return true }
            guard let identifier = p["identifier"]?.stringValue, !identifier.isEmpty else {
                request.fail(.invalidParameter("identifier"))
                return true
            }
            feed(.runNowRequested(app, identifier: identifier), call: request)
        default:
            return false
        }
        return true
    }
}
