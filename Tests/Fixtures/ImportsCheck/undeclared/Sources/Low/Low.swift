import Foundation
import Logging
@preconcurrency import High

/// Python in a string is not an import of this file:
let script = """
    import json
    """
