import Testing
@testable import BGTaskCore

/// An app's energy account against a model (a total and a dictionary of hours, the last 24 kept): kept as
/// one hour without an array while that hour is all of it, as a list once there are more; the same figures
/// either way, equal and hashed alike, however they came.
@Suite struct EnergyAccountTests {
    struct Model {
        var total = EnergyFigures()
        var hours: [Int64: EnergyFigures] = [:]
        mutating func add(_ f: EnergyFigures, hour: Int64) {
            total.add(f)
            hours[hour, default: EnergyFigures()].add(f)
            hours = hours.filter { $0.key > hour - 24 }
        }
        func day(endingAt hour: Int64) -> EnergyFigures {
            var day = EnergyFigures()
            for (h, f) in hours where h > hour - 24 && h <= hour { day.add(f) }
            return day
        }
    }

    @Test func matchesAModel() {
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            var account = EnergyAccount()
            var model = Model()
            var hour = Int64.random(in: 400_000...500_000, using: &rng)
            for _ in 0..<Int.random(in: 1...40, using: &rng) {
                // Mostly the same hour; sometimes the next ones, a day later, or an hour back.
                switch Int.random(in: 0..<10, using: &rng) {
                case 0..<6: break
                case 6..<8: hour += 1
                case 8: hour += 30
                default: hour -= 1
                }
                let f = EnergyFigures(
                    backgroundCPUUSec: Int64.random(in: 0...1_000, using: &rng),
                    wakes: Bool.random(using: &rng) ? [.task: 1] : [:])
                account.add(f, hour: hour)
                model.add(f, hour: hour)
                #expect(account.total == model.total && account.hours == model.hours)
                for end in [hour - 1, hour, hour + 5, hour + 24] { #expect(account.day(endingAt: end) == model.day(endingAt: end)) }
            }
            let rebuilt = EnergyAccount(total: model.total, hours: model.hours)
            #expect(rebuilt == account && rebuilt.hashValue == account.hashValue)
        }
    }

    /// One hour that is all of the account is kept without an array (what 10,000 apps woken once keep);
    /// decoded from its figures (the store's way: hour by hour) it is kept so again.
    @Test func oneHourIsKeptWithoutAList() {
        var account = EnergyAccount()
        let f = EnergyFigures(backgroundCPUUSec: 5, wakes: [.user: 1])
        account.add(f, hour: 10)
        account.add(f, hour: 10)
        #expect(account.isOneHour && account.hours == [10: account.total] && account.day(endingAt: 33) == account.total)
        #expect(account.day(endingAt: 34) == EnergyFigures() && account.day(endingAt: 9) == EnergyFigures())
        var decoded = EnergyAccount(total: account.total)
        decoded.hours[10] = account.total
        #expect(decoded.isOneHour && decoded == account)
        account.add(f, hour: 11)
        #expect(!account.isOneHour && account.hours.count == 2 && account.total.backgroundCPUUSec == 15)
        // A total older than its hours (hours rolled off) is not one hour.
        let older = EnergyAccount(total: EnergyFigures(backgroundCPUUSec: 99), hours: [12: f])
        #expect(!older.isOneHour && older.day(endingAt: 12) == f)
    }
}
