import Testing

@testable import High
@testable import Low
