SELECT month, COUNT(*) AS n FROM flights WHERE dest IN ('MIA','FLL','MCO','PBI','TPA','RSW','SRQ','JAX','EYW') AND month IN (5,6,7,8,9) AND dep_time IS NOT NULL GROUP BY month
