import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.List;

/**
 * The Caffeine replay of tests/caffeine_replay (maximumSize = capacity, maintenance on the caller's
 * thread, getIfPresent then put on a miss), with the loop timed apart from reading the file: each of `repeats`
 * runs replays the whole trace into a fresh cache. Prints {"hits": [...], "wall_s": [...], "cpu_s": [...]}, the
 * CPU time being this thread's (maintenance runs on it: the executor is the caller's thread).
 */
public class ReplayTimed {
  public static void main(String[] args) throws Exception {
    List<String> keys = Files.readAllLines(Paths.get(args[0]));
    keys.removeIf(String::isEmpty);
    long capacity = Long.parseLong(args[1]);
    int repeats = Integer.parseInt(args[2]);
    StringBuilder hits = new StringBuilder();
    StringBuilder walls = new StringBuilder();
    StringBuilder cpus = new StringBuilder();
    ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    for (int r = 0; r < repeats; r++) {
      Cache<String, Boolean> cache =
          Caffeine.newBuilder().maximumSize(capacity).executor(Runnable::run).build();
      long cpuStart = threads.getCurrentThreadCpuTime();
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
      double cpu = (threads.getCurrentThreadCpuTime() - cpuStart) / 1e9;
      hits.append(r > 0 ? ", " : "").append(h);
      walls.append(r > 0 ? ", " : "").append(wall);
      cpus.append(r > 0 ? ", " : "").append(cpu);
    }
    System.out.println("{\"lookups\": " + keys.size() + ", \"hits\": [" + hits + "], \"wall_s\": [" + walls
        + "], \"cpu_s\": [" + cpus + "]}");
  }
}
