SELECT f.dest, COUNT(*) AS n FROM flights f JOIN planes p ON p.tailnum = f.tailnum WHERE (p.engine IN ('Turbo-prop') ) AND dep_time IS NOT NULL GROUP BY f.dest
