import NativeSystem

package struct Helper {}
