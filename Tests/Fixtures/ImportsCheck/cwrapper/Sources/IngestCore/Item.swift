import Helper
import Logging

package struct Item {}
