import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.List;

/**
 * The Caffeine replay of ../shared/reference/caffeine-replay (maximumSize = capacity, maintenance on the caller's
 * thread, getIfPresent then put on a miss), with the loop timed apart from reading the file: each of `repeats`
 * runs replays the whole trace into a fresh cache. Prints {"hits": [...], "wall_s": [...]}.
 */
public class ReplayTimed {
  public static void main(String[] args) throws Exception {
    List<String> keys = Files.readAllLines(Paths.get(args[0]));
    keys.removeIf(String::isEmpty);
    long capacity = Long.parseLong(args[1]);
    int repeats = Integer.parseInt(args[2]);
    StringBuilder hits = new StringBuilder();
    StringBuilder walls = new StringBuilder();
    for (int r = 0; r < repeats; r++) {
      Cache<String, Boolean> cache =
          Caffeine.newBuilder().maximumSize(capacity).executor(Runnable::run).build();
      long start = System.nanoTime();
      long h = 0;
      for (String k : keys) {
        if (cache.getIfPresent(k) != null) {
          h++;
        } else {
          cache.put(k, Boolean.TRUE);
        }
      }
      double wall = (System.nanoTime() - start) / 1e9;
      hits.append(r > 0 ? ", " : "").append(h);
      walls.append(r > 0 ? ", " : "").append(wall);
    }
    System.out.println("{\"lookups\": " + keys.size() + ", \"hits\": [" + hits + "], \"wall_s\": [" + walls + "]}");
  }
}
