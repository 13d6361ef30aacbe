/// A run's bandwidth cap as a timetable: from each time of day on, a rate in bytes per second (nil: no cap), like
/// rclone's `--bwlimit "08:00,512k 19:00,off"`. One entry without a time is a constant cap.
package struct BandwidthSchedule: Sendable, Equatable {
    package struct Entry: Sendable, Equatable {
        /// Minutes after midnight (local time) the rate starts at.
        package var minute: Int
        package var bytesPerSecond: Int64?
        package init(minute: Int, bytesPerSecond: Int64?) {
            self.minute = minute
            self.bytesPerSecond = bytesPerSecond
        }
    }

    /// Sorted by `minute`; never empty.
    package var entries: [Entry]

    package init(entries: [Entry]) {
        self.entries =
            entries.isEmpty ? [Entry(minute: 0, bytesPerSecond: nil)] : entries.sorted { $0.minute < $1.minute }
    }

    package static func constant(_ bytesPerSecond: Int64?) -> BandwidthSchedule {
        BandwidthSchedule(entries: [Entry(minute: 0, bytesPerSecond: bytesPerSecond)])
    }

    /// The rate in force at `minute` of the day: the last entry starting at or before it, else (before the first
    /// entry of the day) the last entry of the previous day.
    package func rate(atMinute minute: Int) -> Int64? {
        (entries.last { $0.minute <= minute } ?? entries.last!).bytesPerSecond
    }
}
