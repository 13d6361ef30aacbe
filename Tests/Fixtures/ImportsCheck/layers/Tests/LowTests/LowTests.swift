import Testing

@testable import Low
