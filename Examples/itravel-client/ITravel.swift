// odrfs-itravel: Apple's iTravel On-Demand Resources demo, on Linux with ODRFSClient.
//
//   odrfs build Examples/travel-guide -o dist && odrfs mount dist /mnt/travel
//   swift run odrfs-itravel /mnt/travel Italy
//
// Visits a country twice: the first visit requests the country's tag (the daemon
// downloads its packs while a progress line runs), reads its files with plain file
// APIs and ends access; the second visit finds everything local and is instant.
import Foundation
import ODRFSClient

@main
struct ITravel {
    static func main() async {
        let arguments = CommandLine.arguments.dropFirst()
        guard arguments.count == 2, let mountpoint = arguments.first, let country = arguments.last else {
            FileHandle.standardError.write(Data("usage: odrfs-itravel <mountpoint> <country tag>   (e.g. /mnt/travel Italy)\n".utf8))
            exit(2)
        }
        do {
            for visit in 1...2 {
                let started = ContinuousClock.now
                let files = try await visitCountry(country, mountpoint: mountpoint)
                print("visit \(visit): read \(files) files of \(country) in \(ContinuousClock.now - started)")
            }
        } catch {
            FileHandle.standardError.write(Data("odrfs-itravel: \(error)\n".utf8))
            exit(1)
        }
    }

    /// One visit to a country's page: request its tag, read its files, end access.
    static func visitCountry(_ country: String, mountpoint: String) async throws -> Int {
        let request = BundleResourceRequest(tags: [country], mountpoint: mountpoint)
        request.loadingPriority = BundleResourceRequest.loadingPriorityUrgent   // the user is waiting
        defer { request.endAccessingResources() }   // the packs may be purged again later

        if await request.conditionallyBeginAccessingResources() {
            print("\(country) is already on this machine")
        } else {
            let reporter = Task {
                while !Task.isCancelled {
                    print(String(format: "  downloading %@: %3.0f%%", country, request.progress.fractionCompleted * 100))
                    try? await Task.sleep(for: .milliseconds(250))
                }
            }
            defer { reporter.cancel() }
            do {
                // A failed conditional begin leaves the request free to begin for real.
                try await request.beginAccessingResources()
            } catch BundleResourceRequestError.invalidTag(let message) {
                throw ITravelError("no guide for \(country): \(message)")
            }
        }
        return try readGuide(country, mountpoint: mountpoint)
    }

    /// Plain file APIs: the mount shows every file; those of a requested tag are local.
    static func readGuide(_ country: String, mountpoint: String) throws -> Int {
        let directory = mountpoint + "/" + country
        var count = 0
        guard let walker = FileManager.default.enumerator(atPath: directory) else { return 0 }
        for case let path as String in walker {
            var isDirectory: ObjCBool = false
            let full = directory + "/" + path
            guard FileManager.default.fileExists(atPath: full, isDirectory: &isDirectory), !isDirectory.boolValue else { continue }
            let data = try Data(contentsOf: URL(fileURLWithPath: full))
            if count == 0, let text = String(data: data.prefix(80), encoding: .utf8) {
                print("  \(path): \(text.split(separator: "\n").first ?? "")")
            }
            count += 1
        }
        return count
    }
}

struct ITravelError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
