package struct FileStatus {}
