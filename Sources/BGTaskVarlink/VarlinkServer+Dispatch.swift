import BGTaskProtocol
import Dispatch
import CSystemd

#if canImport(Glibc)
import Glibc
#endif

extension VarlinkServer {
    func dispatch(_ request: VarlinkRequest) {
        callCount += 1
        let call = request.call
        // The fast path's calls (Begin/End/Acknowledge, a tap's Foreground/Background; declared as the
        // contract declares them): known and checked already, and not the service interface's; no hash of the name.
        if registry.checkedByFastPath(call) {
            guard let service else { return request.fail(.methodNotImplemented(call.method)) }
            return service.handle(request)
        }
        // One hash of the whole name on the common path; the interface is looked at only for errors.
        guard knownMethods.contains(call.method) else {
            let interface = String(call.interface)
            if methodsByInterface[interface] == nil {
                request.fail(.interfaceNotFound(interface))
            } else {
                request.fail(.methodNotFound(call.method))
            }
            return
        }
        // `upgrade` and parameters of the wrong type, for every method, before any handler.
        if let error = registry.check(call) {
            request.fail(error)
            return
        }
        if call.interface == Interfaces.serviceName {
            serveServiceInterface(request)
            return
        }
        guard let service else {
            request.fail(.methodNotImplemented(call.method))
            return
        }
        service.handle(request)
    }

    private func serveServiceInterface(_ request: VarlinkRequest) {
        let call = request.call
        switch call.methodName {
        case "GetInfo":
            request.reply(
                VarlinkReply(parameters: [
                    "vendor": .string(vendor), "product": .string(product), "version": .string(version),
                    "url": .string(url), "interfaces": .array(interfaceOrder.map { .string($0) }),
                ]))
        case "GetInterfaceDescription":
            guard case .string(let name)? = call.parameters["interface"] else {
                request.fail(.invalidParameter("interface"))
                return
            }
            guard let d = descriptions[name] else {
                request.fail(.interfaceNotFound(name))
                return
            }
            request.reply(VarlinkReply(parameters: ["description": .string(d)]))
        default:
            request.fail(.methodNotFound(call.method))
        }
    }
}
